import AccessTokens
import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

@Suite("Gateway edge security", .serialized)
struct EdgeSecurityTests {
    @Test("SesacKey is required on every request, public ones included (E02, HTTP 401)")
    func appKey() async throws {
        try await Stack.run { s in
            for key in [nil, "wrong-key", ""] as [String?] {
                let r = try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"x@example.com"}"#, headers: s.headers(appKey: key))
                #expect(r.status == .unauthorized && errorCode(r) == "E02")
            }
            let ok = try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"x@example.com"}"#, headers: s.headers(appKey: "other-key"))
            #expect(ok.status == .ok, "every configured key is accepted")
        }
    }

    @Test("access tokens: raw, leading space and Bearer accepted; missing, tampered, alg none, wrong audience refused")
    func tokens() async throws {
        try await Stack.run { s in
            let user = try await s.join()
            let token = user.token.accessToken
            for form in [token, " \(token)", "Bearer \(token)"] {
                #expect(try await s.request(.get, "/v1/users/me", token: form).status == .ok, "\(form.prefix(8))")
            }
            #expect(errorCode(try await s.request(.get, "/v1/users/me")) == "E02")
            var parts = token.split(separator: ".").map(String.init)
            parts[2] = String(parts[2].reversed())
            #expect(errorCode(try await s.request(.get, "/v1/users/me", token: parts.joined(separator: "."))) == "E02")
            let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
            let noneResponse = try await s.request(.get, "/v1/users/me", token: none)
            #expect(noneResponse.status == .unauthorized && errorCode(noneResponse) == "E02")
            let foreign = try await AccessTokenSigner(ed25519PrivateKeyPEM: s.keys.privateKey, audience: "another-app", issuer: "chatsuite-auth")
            #expect(errorCode(try await s.request(.get, "/v1/users/me", token: try await foreign.sign(userId: user.user_id, ttl: 600))) == "E02")
            // A client cannot impersonate by sending the forwarded-identity header itself.
            var spoof = s.headers()
            spoof[GatewayHeader.userId] = user.user_id
            #expect(errorCode(try await s.request(.get, "/v1/users/me", headers: spoof)) == "E02")
        }
    }

    @Test("unknown route E97 (404); request ids are returned")
    func unknownRoute() async throws {
        try await Stack.run { s in
            let user = try await s.join()
            let r = try await s.request(.get, "/v1/nothing/here", token: user.token.accessToken)
            #expect(r.status == .notFound && errorCode(r) == "E97")
            #expect(r.headers[GatewayHeader.requestId]?.isEmpty == false)
            let unknownUnderAuth = try await s.request(.get, "/v1/users/me/settings/x", token: user.token.accessToken)
            #expect(errorCode(unknownUnderAuth) == "E97")
        }
    }

    @Test("rate limit: E98 (429) past the burst, then recovery")
    func rateLimit() async throws {
        try await Stack.run(gateway: ["GATEWAY_USER_BURST": "5", "GATEWAY_USER_RATE_PER_SECOND": "1"]) { s in
            let user = try await s.join()
            // 15 at once: however slow the machine, at most 5 + elapsed seconds × 1 get through.
            let results = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                for _ in 0..<15 {
                    group.addTask {
                        let r = try await s.request(.get, "/v1/users/me", token: user.token.accessToken)
                        return (r.status, errorCode(r))
                    }
                }
                var out: [(HTTPResponse.Status, String?)] = []
                for try await result in group { out.append(result) }
                return out
            }
            let limited = results.filter { $0.0 == .tooManyRequests }
            #expect(limited.count >= 5, "\(results.map(\.0))")
            #expect(limited.allSatisfy { $0.1 == "E98" })
            #expect(results.filter { $0.0 == .ok }.count >= 5)
            try await Task.sleep(for: .milliseconds(1_500))
            #expect(try await s.request(.get, "/v1/users/me", token: user.token.accessToken).status == .ok, "recovers")
        }
    }

    @Test("oversized bodies are refused at the edge (E11, 413)")
    func bodyLimit() async throws {
        try await Stack.run(gateway: ["GATEWAY_MAX_PLAIN_BODY_BYTES": "1024"]) { s in
            let big = String(repeating: "a", count: 4096)
            let r = try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"\#(big)@example.com"}"#)
            #expect(r.status == .contentTooLarge && errorCode(r) == "E11")
        }
    }
}
