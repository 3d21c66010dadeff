import AsyncHTTPClient
import Events
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// What the real-time protocols ask chat over its internal routes ([chat-api.md](../../../docs/chat-api.md)):
/// whether a user may read a conversation, a native session's `ready` snapshot, and the messages
/// a resuming session missed. Anything but a clear answer (an error, a timeout) is a refusal.
struct ConversationAccess: Sendable {
    let client: HTTPClient
    let chatURL: String
    let logger: Logger

    /// What a reader check tells: the conversation's kind and workspace.
    struct Readable: Sendable, Equatable {
        var kind: ChatEvents.Conversation.Kind
        var workspaceId: UUID?
    }

    /// The conversation's kind and workspace when `user` may read it
    /// (`GET /internal/v1/conversations/{c}/readers/{u}` → 204 with `Chatsuite-Conversation-Kind`
    /// and `Chatsuite-Conversation-Workspace`), nil when not.
    func mayRead(user: String, conversation: UUID) async -> Readable? {
        guard let userId = UUID(uuidString: user) else { return nil }
        let url = "\(chatURL)/internal/v1/conversations/\(conversation.uuidString.lowercased())/readers/\(userId.uuidString.lowercased())"
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(3))
            _ = try? await response.body.collect(upTo: 1024)
            switch response.status.code {
            case 204:
                return Readable(
                    kind: response.headers.first(name: "Chatsuite-Conversation-Kind").flatMap(ChatEvents.Conversation.Kind.init) ?? .channel,
                    workspaceId: response.headers.first(name: "Chatsuite-Conversation-Workspace").flatMap(UUID.init(uuidString:))
                )
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

    /// The `ready` snapshot of `user` as chat writes it (`{"workspaces","channels","dms"}`).
    func sessionSnapshot(user: UserID) async throws -> ByteBuffer {
        let response = try await client.execute(HTTPClientRequest(url: "\(chatURL)/internal/v1/users/\(user)/session"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 16 << 20)
        guard response.status == .ok else { throw ChatInternalError(status: response.status.code) }
        return body
    }

    /// One replayed message: its dispatch type, conversation, id, time and JSON object.
    struct ReplayedMessage: Sendable {
        var type: String
        var conversationId: UUID
        var messageId: UUID
        var createdAtMilliseconds: Int64
        var json: String
    }

    /// What a resume replays: the messages after each cursor (epoch ms, strictly after) that
    /// `user` can still read, oldest first, and the asked conversations they can no longer read.
    struct Replay: Sendable {
        var messages: [ReplayedMessage] = []
        var removed: [UUID] = []
    }

    /// The replay for `user` from `cursors`; nil when there are more than `limit` messages.
    func replay(user: UserID, cursors: [(UUID, Int64)], limit: Int) async throws -> Replay? {
        var request = HTTPClientRequest(url: "\(chatURL)/internal/v1/users/\(user)/replay")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        let items = cursors.map { #"{"conversation_id":"\#($0.0.uuidString.lowercased())","after_ms":\#($0.1)}"# }
        request.body = .bytes(ByteBuffer(string: #"{"limit":\#(limit),"cursors":[\#(items.joined(separator: ","))]}"#))
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 256 << 20)
        guard response.status == .ok else { throw ChatInternalError(status: response.status.code) }
        if response.headers.first(name: "Chatsuite-Replay-More") == "true" { return nil }
        var replay = Replay()
        for line in String(buffer: body).split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            if fields.count == 2, fields[0] == "conversation.removed", let conversation = UUID(uuidString: String(fields[1])) {
                replay.removed.append(conversation)
                continue
            }
            guard fields.count == 5, let conversation = UUID(uuidString: String(fields[1])), let id = UUID(uuidString: String(fields[2])),
                  let ms = Int64(fields[3]) else { throw ChatInternalError(status: 0) }
            replay.messages.append(ReplayedMessage(type: String(fields[0]), conversationId: conversation, messageId: id, createdAtMilliseconds: ms, json: String(fields[4])))
        }
        return replay
    }
}

struct ChatInternalError: Error, CustomStringConvertible {
    let status: UInt
    var description: String { status == 0 ? "chat answered a malformed replay" : "chat answered HTTP \(status)" }
}
