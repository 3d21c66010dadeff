import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Auth under dependency failures and races", .serialized)
struct AuthFailureTests {
    @Test("concurrent joins with one email: exactly one account (the database decides), the rest E12")
    func concurrentJoins() async throws {
        try await Stack.run { s in
            let racing = s.onOwnConnections()  // really at once, not queued on one connection
            let results = try await withThrowingTaskGroup(of: String?.self) { group in
                for i in 0..<6 {
                    group.addTask {
                        let r = try await racing.request(
                            .post, "/v1/users/join", json: #"{"email":"race@example.com","password":"secret123","nickname":"r\#(i)"}"#)
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
