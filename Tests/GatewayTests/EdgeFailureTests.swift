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
}
