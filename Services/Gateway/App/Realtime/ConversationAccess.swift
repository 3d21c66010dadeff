import AsyncHTTPClient
import ChatInternalAPI
import Events
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// What the real-time protocols ask chat over its internal API (`ChatInternal`,
/// [chat-api.md](../../../docs/chat-api.md)): whether a user may read a conversation, a native
/// session's `ready` snapshot, and the messages a resuming session missed. Anything but a clear
/// answer (an error, a timeout) is a refusal.
struct ConversationAccess: Sendable {
    let client: HTTPClient
    let chatURL: String
    let logger: Logger

    /// The conversation's kind and workspace when `user` may read it, nil when not.
    func mayRead(user: String, conversation: UUID) async -> ChatInternal.Readable? {
        guard let userId = UUID(uuidString: user) else { return nil }
        let url = chatURL + ChatInternal.ReaderCheck.path(conversation: conversation, user: userId)
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(3))
            _ = try? await response.body.collect(upTo: 1024)
            switch response.status.code {
            case 204: return ChatInternal.Readable { response.headers.first(name: $0.rawName) }
            case 404: return nil
            default:
                logger.warning("chat reader check failed", metadata: ["http.status": "\(response.status.code)"])
                return nil
            }
        } catch {
            logger.warning("chat reader check failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The `ready` snapshot of `user` as chat writes it (a `ChatInternal.SessionSnapshot`), to
    /// splice into `ready` as it is.
    func sessionSnapshot(user: UserID) async throws -> ByteBuffer {
        let response = try await client.execute(HTTPClientRequest(url: chatURL + ChatInternal.Session.path(user: user)), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 16 << 20)
        guard response.status == .ok else { throw ChatInternalError(status: response.status.code) }
        return body
    }

    /// The replay for `user` from `cursors` (conversation, epoch ms); nil when there are more
    /// than `limit` messages.
    func replay(user: UserID, cursors: [(UUID, Int64)], limit: Int) async throws -> ChatInternal.ReplayAnswer? {
        var request = HTTPClientRequest(url: chatURL + ChatInternal.Replay.path(user: user))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        let body = ChatInternal.ReplayRequest(cursors: cursors.map { .init(conversation_id: $0.0, after_ms: $0.1) }, limit: limit)
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        let response = try await client.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 256 << 20)
        guard response.status == .ok else { throw ChatInternalError(status: response.status.code) }
        if response.headers.first(name: ChatInternal.Replay.moreHeader.rawName) == "true" { return nil }
        return try ChatInternal.ReplayAnswer(parsing: String(buffer: answer))
    }
}

struct ChatInternalError: Error, CustomStringConvertible {
    let status: UInt
    var description: String { status == 0 ? "chat answered a malformed session snapshot" : "chat answered HTTP \(status)" }
}
