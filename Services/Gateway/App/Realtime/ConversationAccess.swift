import AsyncHTTPClient
import ChatInternalAPI
import Database
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
        guard let userId = UUID(parsing: user) else { return nil }
        return await check(chatURL + ChatInternal.ReaderCheck.path(conversation: conversation, user: userId))
    }

    /// The same for a conversation a legacy client names by its integer alias; the answer
    /// carries the conversation's id.
    func mayRead(user: String, alias: Int64, kind: ChatEvents.Conversation.Kind) async -> ChatInternal.Readable? {
        guard let userId = UUID(parsing: user) else { return nil }
        guard let readable = await check(chatURL + ChatInternal.ReaderCheck.path(alias: alias, kind: kind, user: userId)),
            readable.conversationId != nil
        else { return nil }
        return readable
    }

    /// The channel with this integer alias (Gen A's namespaces, joined without credentials).
    func channel(alias: Int64) async -> UUID? {
        await check(chatURL + ChatInternal.ChannelAlias.path(alias: alias))?.conversationId
    }

    /// The workspace `community` names (its id, or its integer alias as Smooth sends it) when
    /// `user` is a member of it; nil when not.
    func community(_ community: String, member user: UserID) async -> UUID? {
        guard UUID(parsing: community) != nil || IntegerAlias.parse(community) != nil else { return nil }
        return await check(chatURL + ChatInternal.CommunityCheck.path(community: community, user: user.uuid))?.workspaceId
    }

    private func check(_ url: String) async -> ChatInternal.Readable? {
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
