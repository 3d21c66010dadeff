import Foundation
import HTTPTypes
import PostgresNIO
import SuiteTesting
import Testing

/// Helpers of the `/auth-server` tests.
enum SmoothAuth {
    static func email() -> String { "smooth\(UUID().uuidString.prefix(8).lowercased())@example.com" }

    static func name() -> String { "u\(UUID().uuidString.prefix(8).lowercased())" }

    /// The sorted keys of an object.
    static func keys(_ object: [String: Any]?) -> [String] { (object ?? [:]).keys.sorted() }

    /// The keys whose value is JSON null.
    static func nullKeys(_ object: [String: Any]?) -> [String] { (object ?? [:]).filter { $0.value is NSNull }.keys.sorted() }

    /// A JWT's payload claims (no verification: the test reads its own token).
    static func claims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        try #require(parts.count == 3)
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let data = try #require(Data(base64Encoded: payload))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The `data` of the auth service's outbox events of `type` about the user with `alias`.
    static func events(_ s: Stack, type: String, alias: Int) async throws -> [[String: Any]] {
        let db = try #require(s.databases["auth"])
        var out: [[String: Any]] = []
        let rows = try await db.query(
            """
            SELECT convert_from(o.payload, 'UTF8') FROM outbox o JOIN users u ON o.event_key = u.id::text
            WHERE o.event_type = \(type) AND u.alias = \(Int64(alias)) ORDER BY o.id
            """)
        for try await json in rows.decode(String.self) {
            let event = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            out.append(try #require(event["data"] as? [String: Any]))
        }
        return out
    }

    /// Signs up (no sign-in) and returns the answer.
    static func signUp(_ s: Stack, email: String, password: String = "password1", name: String) async throws -> SmoothAnswer {
        try await s.smooth(.post, "/auth-server/sign-up", json: #"{"email":"\#(email)","password":"\#(password)","name":"\#(name)"}"#)
    }
}
