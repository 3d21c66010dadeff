import ClientContract
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// The kinds of conversation under `/v1`: `workspaces/{w}/channels/{c}`, `workspaces/{w}/dms/{r}`
/// and personal rooms `rooms/{r}`. The routes that work alike on all (edit, delete, reactions,
/// read cursors) are registered once per kind and resolve the conversation through this.
enum ConversationKind: Sendable, CaseIterable {
    case channel
    case dm
    case room

    /// The route prefix under `/v1`; `:conversation` is the channel or room id.
    var path: RouterPath {
        switch self {
        case .channel: "workspaces/:workspace/channels/:conversation"
        case .dm: "workspaces/:workspace/dms/:conversation"
        case .room: "rooms/:conversation"
        }
    }
}

extension Conversation {
    /// nil for a personal room.
    var workspaceId: WorkspaceID? {
        switch self {
        case .channel(let channel): channel.workspaceId
        case .room(let room): room.workspaceId
        }
    }

    /// How events name it (a room with its participants, so delivery needs no lookup).
    var event: ChatEvents.Conversation {
        switch self {
        case .channel(let channel): .channel(channel.id, alias: channel.alias)
        case .room(let room): .room(room.id, participants: Array(Set(room.participants)).sorted(), alias: room.alias)
        }
    }
}

/// A message as the conversation's kind shows it: `ChannelChat` or `DMChat`.
enum MessageResponse: JSONWritable {
    case channel(ChannelChatResponse)
    case dm(DMChatResponse)

    init(_ message: StoredMessage, in conversation: Conversation) {
        switch conversation {
        case .channel(let channel): self = .channel(ChannelChatResponse(message, in: channel))
        case .room(let room): self = .dm(DMChatResponse(message, in: room))
        }
    }

    func write(to json: inout JSONWriter) {
        switch self {
        case .channel(let response): response.write(to: &json)
        case .dm(let response): response.write(to: &json)
        }
    }
}

extension ChatAPI {
    /// The conversation of the request's path when the caller may use it (else E13); locked for
    /// the transaction when `lock` (which serialises its message inserts).
    func conversation(
        _ kind: ConversationKind, _ context: AuthenticatedContext, lock: Bool,
        _ c: PostgresConnection
    ) async throws -> Conversation {
        let me = context.identity
        if kind == .room {
            guard let room = try await personalRooms.store.room(try pathID(context, "conversation"), member: me, lock: lock, c) else {
                throw APIError.notFound("room")
            }
            return .room(room)
        }
        let workspace: WorkspaceID = try pathID(context, "workspace")
        switch kind {
        case .room: throw APIError.notFound("room")
        case .channel:
            guard let channel = try await messages.channel(try pathID(context, "conversation"), in: workspace, member: me, lock: lock, c) else {
                throw APIError.notFound("channel")
            }
            return .channel(channel)
        case .dm:
            guard let room = try await rooms.room(try pathID(context, "conversation"), in: workspace, participant: me, lock: lock, c) else {
                throw APIError.notFound("room")
            }
            return .room(room)
        }
    }
}
