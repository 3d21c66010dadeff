import AsyncHTTPClient
import Events
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import ServiceKit

/// What a STOMP `SEND` becomes: the same request the REST route makes (the gateway is the one
/// HTTP client of the services), as the connected user, so a STOMP message is stored, published
/// and fanned out to every protocol like any other — under the same per-user rate limit as the
/// REST edge (the same buckets: a user's REST and STOMP requests share them).
struct StompOperations: Sendable {
    let client: HTTPClient
    let chatURL: String
    let userLimiter: RateLimiter

    /// A refusal for the client: the service's error code (`E13`, …) or the gateway's reason.
    struct Refusal: Error, Sendable {
        var message: String
    }

    /// The conversation's `/v1` path: a channel or DM room of a workspace, or a personal room.
    private func path(_ conversation: LiveFollow, workspace: UUID?) -> String {
        guard let workspace else { return "/v1/rooms/\(conversation.id.lowercased)" }
        let segment = conversation.kind == .dm ? "dms" : "channels"
        return "/v1/workspaces/\(workspace.lowercased)/\(segment)/\(conversation.id.lowercased)"
    }

    /// `POST …/chats` with `content` (and `parent_id` for a reply).
    func post(_ content: String, parent: UUID?, in conversation: LiveFollow, workspace: UUID?, as user: UserID, requestId: String) async throws(Refusal) {
        var body: [String: String] = ["content": content]
        if let parent { body["parent_id"] = parent.lowercased }
        try await call(.POST, chatURL + path(conversation, workspace: workspace) + "/chats", body: body, user: user, requestId: requestId)
    }

    /// `PUT …/chats/{id}` with the new `content`.
    func edit(_ message: UUID, content: String, in conversation: LiveFollow, workspace: UUID?, as user: UserID, requestId: String) async throws(Refusal) {
        try await call(
            .PUT, chatURL + path(conversation, workspace: workspace) + "/chats/\(message.lowercased)", body: ["content": content], user: user,
            requestId: requestId)
    }

    /// `DELETE …/chats/{id}`.
    func delete(_ message: UUID, in conversation: LiveFollow, workspace: UUID?, as user: UserID, requestId: String) async throws(Refusal) {
        try await call(
            .DELETE, chatURL + path(conversation, workspace: workspace) + "/chats/\(message.lowercased)", body: nil, user: user, requestId: requestId)
    }

    /// `PUT …/read`: everything in the conversation up to now is read.
    func markRead(_ conversation: LiveFollow, workspace: UUID?, as user: UserID, requestId: String) async throws(Refusal) {
        try await call(.PUT, chatURL + path(conversation, workspace: workspace) + "/read", body: [:], user: user, requestId: requestId)
    }

    private func call(_ method: HTTPMethod, _ url: String, body: [String: String]?, user: UserID, requestId: String) async throws(Refusal) {
        guard userLimiter.allow(user.description) else { throw Refusal(message: APIError.tooManyRequests.code) }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: GatewayHeader.userId.rawName, value: user.description)
        request.headers.add(name: GatewayHeader.requestId.rawName, value: requestId)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            do {
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
            } catch {
                throw Refusal(message: "the request could not be encoded")
            }
        }
        let status: UInt
        let answer: ByteBuffer
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            status = response.status.code
            answer = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw Refusal(message: "the service is unavailable; try again")
        }
        guard (200..<300).contains(status) else {
            let code = (try? JSONDecoder().decode([String: String].self, from: Data(answer.readableBytesView)))?["errorCode"]
            throw Refusal(message: code ?? "the service answered HTTP \(status)")
        }
    }
}
