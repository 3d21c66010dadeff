import Foundation
import HTTPTypes
import PostgresNIO
import Testing

extension Stack {
    /// Signs a new user up and in through `/auth-server`, as Smooth's app does (no email
    /// verification: its server never required one), and waits until the running workspace
    /// and chat projections know the user.
    public func smoothUser(
        name: String = "u\(UUID().uuidString.prefix(8).lowercased())", email: String = "smooth\(UUID().uuidString.prefix(8))@example.com",
        password: String = "password1", deviceToken: String? = nil
    ) async throws -> SmoothUser {
        let signUp = try await smooth(.post, "/auth-server/sign-up", json: #"{"email":"\#(email)","password":"\#(password)","name":"\#(name)"}"#)
        #expect(signUp.outcome == "200 1000", "Smooth sign-up: \(signUp.body)")
        let device = deviceToken.map { #""\#($0)""# } ?? "null"
        let signIn = try await smooth(
            .post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"\#(password)","type":"ios","deviceToken":\#(device)}"#)
        #expect(signIn.outcome == "200 1000", "Smooth sign-in: \(signIn.body)")
        let result = try #require(signIn.result)
        let user = SmoothUser(
            id: try #require(result["id"] as? Int), email: email, name: try #require(result["name"] as? String),
            code: try #require(result["code"] as? String), token: try #require(result["accessToken"] as? String))
        if let auth = databases["auth"] {
            for try await id in try await auth.query("SELECT id FROM users WHERE alias = \(Int64(user.id))").decode(UUID.self) {
                try await waitForProfile(id.uuidString.lowercased())
            }
        }
        return user
    }
}
