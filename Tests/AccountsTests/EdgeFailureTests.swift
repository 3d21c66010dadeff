import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Edge and dependency failures", .serialized)
struct EdgeFailureTests {
    @Test("a service that does not answer is E99 with HTTP 503, not a hang or a 500")
    func upstreamDown() async throws {
        try await Stack.run(gateway: ["WORKSPACE_URL": "http://127.0.0.1:1"]) { s in
            let user = try await s.join()
            let r = try await s.request(.get, "/v1/workspaces", token: user.token.accessToken)
            #expect(r.status == .serviceUnavailable && errorCode(r) == "E99")
        }
    }

    @Test("per-address limit applies to public requests too (E98), then recovers")
    func addressLimit() async throws {
        try await Stack.run(gateway: ["GATEWAY_ADDRESS_BURST": "4", "GATEWAY_ADDRESS_RATE_PER_SECOND": "1"]) { s in
            // 12 at once: however slow the machine, at most 4 + elapsed seconds × 1 get through.
            let codes = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<12 {
                    group.addTask { errorCode(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"a@example.com"}"#)) }
                }
                var out: [String?] = []
                for try await code in group { out.append(code) }
                return out
            }
            #expect(codes.filter { $0 == "E98" }.count >= 4, "\(codes)")
            #expect(codes.filter { $0 == nil }.count >= 4)
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"a@example.com"}"#).status == .ok)
        }
    }

    @Test("concurrent joins with one email: exactly one account (the database decides), the rest E12")
    func concurrentJoins() async throws {
        try await Stack.run { s in
            let results = try await withThrowingTaskGroup(of: String?.self) { group in
                for i in 0..<6 {
                    group.addTask {
                        let r = try await s.request(.post, "/v1/users/join", json: #"{"email":"race@example.com","password":"secret123","nickname":"r\#(i)"}"#)
                        return r.status == .ok ? "ok" : errorCode(r)
                    }
                }
                var out: [String?] = []
                for try await r in group { out.append(r) }
                return out
            }
            #expect(results.filter { $0 == "ok" }.count == 1)
            #expect(results.filter { $0 == "E12" }.count == 5)
        }
    }

    @Test("Apple's key server unreachable: E99 (503), not E03 (the client's token is not at fault)")
    func appleKeysUnreachable() async throws {
        try await Stack.run(services: [.auth(env: ["APPLE_JWKS_URL": "http://127.0.0.1:1/auth/keys", "APPLE_AUDIENCE": "com.example.app"])]) { s in
            let r = try await s.request(.post, "/v1/users/login/apple", json: #"{"idToken":"eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}"#)
            #expect(r.status == .serviceUnavailable && errorCode(r) == "E99")
        }
    }
}
