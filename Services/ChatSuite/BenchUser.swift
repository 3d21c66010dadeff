import ArgumentParser
import LoadGen
import NIOHTTP1

extension GatewayClient {
    /// Signs up a fresh user for a benchmark (`<prefix>-<tag>@example.com`) and returns its access token.
    func joinBenchUser(_ prefix: String, tag: String) async throws -> String {
        let join = try await send(
            .POST, "/v1/users/join", json: #"{"email":"\#(prefix)-\#(tag)@example.com","password":"bench password 1","nickname":"bench"}"#)
        guard join.status == .ok, let token = (json(join.body)?["token"] as? [String: Any])?["accessToken"] as? String else {
            throw ValidationError("join failed with HTTP \(join.status.code)")
        }
        return token
    }
}
