import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

/// The edge of Smooth's surface (docs/smooth-api.md): no SesacKey, the raw token after a space,
/// 401 with an empty body for a missing or bad token, envelopes for every other refusal,
/// configurable prefixes, and the token-less history reads its client makes.
@Suite("Smooth edge", .serialized)
struct SmoothEdgeTests {
    @Test("a protected Smooth path: no token, a forged one, a Bearer of garbage → 401 with an empty body; no SesacKey needed")
    func unauthenticated() async throws {
        try await Stack.run(services: [.auth, .chat]) { s in
            let user = try await s.join()
            var parts = user.token.accessToken.split(separator: ".").map(String.init)
            parts[2] = String(parts[2].reversed())
            for token in [nil, parts.joined(separator: "."), "garbage"] as [String?] {
                let r = try await s.smooth(.post, "/chat-server/channel/file", token.map { .init(id: 0, email: "", name: "", code: "", token: $0) })
                #expect(r.status == .unauthorized && r.response.body.readableBytes == 0, "\(token?.prefix(6) ?? "none"): \(r.outcome) \(r.body)")
            }
        }
    }

    @Test("history without a token is served (empty envelope refusal for an unknown channel), with a forged token 401, and with anonymous-history off 401")
    func anonymousHistory() async throws {
        try await Stack.run(services: [.auth, .chat]) { s in
            let r = try await s.smooth(.get, "/chat-server/community?ch_id=4242&page=0&size=20")
            #expect(r.outcome == "400 4004", "unknown channel, anonymously: \(r.body)")
            #expect(r.envelope?["isSuccess"] as? Bool == false && r.envelope?["message"] is String)
            let forged = Stack.SmoothUser(id: 1, email: "", name: "", code: "", token: "e30.e30.sig")
            #expect(try await s.smooth(.get, "/chat-server/community?ch_id=4242", forged).status == .unauthorized)
            for query in ["ch_id=abc", "ch_id=1&page=-1", "ch_id=1&size=0", "ch_id=1&size=101", "ch_id=1&page=99999999&size=100", ""] {
                #expect(try await s.smooth(.get, "/chat-server/community?\(query)").outcome == "400 2100", "\(query)")
            }
        }
        try await Stack.run(services: [.auth, .chat], gateway: ["GATEWAY_SMOOTH_ANONYMOUS_HISTORY": "false"]) { s in
            let r = try await s.smooth(.get, "/chat-server/community?ch_id=4242")
            #expect(r.status == .unauthorized && r.response.body.readableBytes == 0)
        }
    }

    @Test("prefixes are settings; an unknown path under a prefix is a 404 envelope; a body over the limit a 413 envelope")
    func prefixesAndLimits() async throws {
        try await Stack.run(services: [.auth, .chat], gateway: ["GATEWAY_SMOOTH_CHAT_PREFIX": "/chat", "GATEWAY_MAX_PLAIN_BODY_BYTES": "1024"]) { s in
            #expect(try await s.smooth(.get, "/chat/community?ch_id=4242").outcome == "400 4004")
            #expect(try await s.smooth(.get, "/chat-server/community?ch_id=4242").status == .notFound, "the default prefix is gone")
            let user = try await s.join()
            let smoothUser = Stack.SmoothUser(id: 0, email: user.email, name: "", code: "", token: user.token.accessToken)
            let unknown = try await s.smooth(.get, "/chat/no-such-thing", smoothUser)
            #expect(unknown.status == .notFound && unknown.code == 2100, "\(unknown.body)")
            let big = try await s.smooth(.post, "/auth-server/sign-in", json: "{\"email\":\"" + String(repeating: "a", count: 4096) + "\"}")
            #expect(big.status == .contentTooLarge && big.envelope?["isSuccess"] as? Bool == false, "\(big.outcome) \(big.body)")
            // The limit counts bytes: 400 Hangul syllables are 400 characters but 1200 bytes.
            let wide = try await s.smooth(.post, "/auth-server/sign-in", json: "{\"email\":\"" + String(repeating: "가", count: 400) + "\"}")
            #expect(wide.status == .contentTooLarge, "\(wide.outcome)")
            #expect(try await s.smooth(.get, "/chat/community?ch_id=4242").outcome == "400 4004", "the edge still answers")
        }
    }

    @Test("too fast: past the per-address budget Smooth paths answer 429 with the envelope (1429); other clients are still served")
    func tooFast() async throws {
        try await Stack.run(services: [.auth, .chat], gateway: ["GATEWAY_ADDRESS_RATE_PER_SECOND": "1", "GATEWAY_ADDRESS_BURST": "5"]) { s in
            var outcomes: [String] = []
            let started = ContinuousClock.now
            for _ in 0..<12 { outcomes.append(try await s.smooth(.get, "/chat-server/community?ch_id=4242").outcome) }
            let elapsed = ContinuousClock.now - started
            #expect(outcomes.prefix(5).allSatisfy { $0 == "400 4004" }, "\(outcomes)")
            #expect(outcomes.allSatisfy { $0 == "400 4004" || $0 == "429 1429" }, "\(outcomes)")
            // Past the burst only the budget refilled meanwhile (1 a second) gets through: on a
            // loaded machine the 12 requests may take seconds.
            let allowed = 5 + Int(elapsed.components.seconds) + 1
            #expect(outcomes.count { $0 == "400 4004" } <= allowed, "\(outcomes) in \(elapsed)")
            // The services behind the edge were never reached by the refused ones and still answer.
            let direct = try #require(s.services["chat"])
            #expect(try await direct.execute(uri: "/health/ready", method: .get).status == .ok)
        }
    }
}
