import ChatInternalAPI
import ClientContract
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresNIO
import ServiceKit

/// What the gateway's native protocol asks chat (docs/native-gateway.md; the wire types are
/// `ChatInternal`'s):
/// - `ChatInternal.Session`: the `ready` snapshot — the user's workspaces, the channels they are
///   in and their DM rooms, each with its unread count (as `.../unreads`).
/// - `ChatInternal.Replay`: for the conversations the user can still read, the live messages
///   created after each cursor (epoch milliseconds, strictly after; per conversation the times
///   are strictly increasing, so a time is a position), oldest first overall, then the changes
///   the client missed to the messages it already had — those created at or before the cursor
///   and deleted or edited strictly after it, one line each (a deletion wins over edits; an edit
///   carries the current text), by change time — as `ReplayLine`s, preceded by a removal line per
///   asked conversation the user can no longer read (a resuming session must stop following it).
///   A message created after the cursor needs no change line: it is replayed as it is now (or
///   not at all when deleted). When more than `limit` messages and changes together were found,
///   none and the "more" header (the client is too far behind to resume).
extension ChatAPI {
    func addSessionRoutes(to routes: RouteCollection<SuiteRequestContext>) {
        routes.get(RouterPath(ChatInternal.Session.route)) { _, context -> Response in
            guard let user = context.parameters.get("user").flatMap(UserID.init) else { return Response(status: .badRequest) }
            let snapshot = try await postgres.withLiveConnection { try await sessionSnapshot(of: user, $0) }
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: SessionSnapshotJSON(snapshot).jsonBuffer))
        }
        routes.post(RouterPath(ChatInternal.Replay.route)) { request, context -> Response in
            guard let user = context.parameters.get("user").flatMap(UserID.init),
                let body = try? await request.decode(as: ChatInternal.ReplayRequest.self, context: context), body.isValid
            else {
                return Response(status: .badRequest)
            }
            let (lines, more) = try await postgres.withLiveConnection { try await replay(body, for: user, $0) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            if more { headers[ChatInternal.Replay.moreHeader] = "true" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: lines))
        }
    }

    private func sessionSnapshot(of user: UserID, _ c: PostgresConnection) async throws -> ChatInternal.SessionSnapshot {
        var snapshot = ChatInternal.SessionSnapshot()
        snapshot.channels = try await cursors.channelUnreads(of: user, in: nil, c).map {
            .init(channel_id: ChannelID($0.conversationId), workspace_id: WorkspaceID($0.workspaceId), name: $0.name, unread_count: $0.count)
        }
        snapshot.dms = try await cursors.roomUnreads(of: user, in: nil, c).map {
            .init(room_id: RoomID($0.conversationId), workspace_id: WorkspaceID($0.workspaceId), user_id: $0.opponent.map(UserID.init), unread_count: $0.count)
        }
        let unread = Dictionary(try await personalRooms.store.unread(of: user, c).map { ($0.room.id, $0.count) }, uniquingKeysWith: max)
        snapshot.rooms = try await personalRooms.store.rooms(of: user, c).map { room in
            .init(room_id: room.id, group: room.group, name: room.name, user_id: room.group ? nil : room.other(than: user), unread_count: unread[room.id] ?? 0)
        }
        for try await workspace in try await c.query(
            """
            SELECT workspace_id FROM workspace_members WHERE user_id = \(user.uuid) ORDER BY workspace_id
            """, logger: logger
        ).decode(UUID.self) {
            snapshot.workspaces.append(.init(workspace_id: WorkspaceID(workspace)))
        }
        return snapshot
    }

    private func replay(_ request: ChatInternal.ReplayRequest, for user: UserID, _ c: PostgresConnection) async throws -> (ByteBuffer, Bool) {
        let wanted = Dictionary(request.cursors.map { ($0.conversation_id, $0.after_ms) }, uniquingKeysWith: max)
        let ids = Array(wanted.keys)
        var conversations: [Conversation] = []
        for try await (id, workspace, name, low, high, created) in try await c.query(
            """
            SELECT ch.id, ch.workspace_id, ch.name, NULL::uuid, NULL::uuid, NULL::timestamptz
            FROM channels ch JOIN channel_members cm ON cm.channel_id = ch.id AND cm.user_id = \(user.uuid)
            WHERE ch.id = ANY(\(ids))
            UNION ALL
            SELECT d.id, d.workspace_id, NULL, d.user_low, d.user_high, d.created_at
            FROM dm_rooms d JOIN workspace_members w ON w.workspace_id = d.workspace_id AND w.user_id = \(user.uuid)
            WHERE d.id = ANY(\(ids)) AND (d.user_low = \(user.uuid) OR d.user_high = \(user.uuid))
            """, logger: logger
        ).decode((UUID, UUID, String?, UUID?, UUID?, Date?).self) {
            if let name {
                conversations.append(.channel(ChannelRef(id: ChannelID(id), workspaceId: WorkspaceID(workspace), name: name)))
            } else if let low, let high, let created {
                conversations.append(
                    .room(
                        RoomRef(
                            id: RoomID(id), workspaceId: WorkspaceID(workspace), participants: [UserID(low), UserID(high)], createdAt: created
                        )))
            }
        }
        // Personal rooms the user is a member of (a closed friends' room too: it is still theirs).
        for room in try await personalRooms.store.rooms(of: user, including: ids, c) { conversations.append(.room(room)) }
        var out = ByteBuffer()
        let readable = Set(conversations.map(\.id))
        for id in ids where !readable.contains(id) {
            out.writeString(ChatInternal.ReplayLine.removed(id).text)
        }
        var found: [(message: StoredMessage, conversation: Conversation)] = []
        for conversation in conversations {
            for message in try await messages.history(conversation, after: wanted[conversation.id] ?? 0, c) {
                found.append((message, conversation))
                if found.count > request.limit { return (ByteBuffer(), true) }
            }
        }
        // Changes to the messages the client had count against the same limit.
        let changes = try await messages.changes(
            after: conversations.map { ($0.id, wanted[$0.id] ?? 0) }, limit: request.limit - found.count + 1, c)
        if found.count + changes.count > request.limit { return (ByteBuffer(), true) }
        let kinds = Dictionary(conversations.map { ($0.id, $0.event.kind) }, uniquingKeysWith: { first, _ in first })
        found.sort { ($0.message.createdAt, $0.message.id.uuid.lowercased) < ($1.message.createdAt, $1.message.id.uuid.lowercased) }
        for (message, conversation) in found {
            let kind: ChatEvents.Conversation.Kind
            var json: ByteBuffer
            switch conversation {
            case .channel(let channel): (kind, json) = (.channel, ChannelChatResponse(message, in: channel).jsonBuffer)
            case .room(let room): (kind, json) = (.dm, DMChatResponse(message, in: room).jsonBuffer)
            }
            out.writeString(
                ChatInternal.ReplayLine.messageHead(
                    kind: kind, conversationId: conversation.id, messageId: message.id.uuid,
                    createdAtMilliseconds: Timestamp.milliseconds(message.createdAt)
                ))
            out.writeBuffer(&json)
            out.writeString("\n")
        }
        for change in changes {
            guard let kind = kinds[change.conversationId] else { continue }
            // A deletion's text and mentions are gone (the payload writes neither for it).
            let payload = MessageChangePayload(
                change: change.deleted ? .deleted : .edited, kind: kind, conversationId: change.conversationId, messageId: change.messageId.uuid,
                senderId: change.senderId, content: change.content, mentions: change.mentions, at: change.at)
            var json = payload.jsonBuffer
            out.writeString(
                ChatInternal.ReplayLine.changeHead(
                    payload.change, conversationId: payload.conversationId, messageId: payload.messageId,
                    atMilliseconds: Timestamp.milliseconds(payload.at)))
            out.writeBuffer(&json)
            out.writeString("\n")
        }
        return (out, false)
    }
}

/// The `ready` snapshot as JSON, written by hand rather than with `JSONEncoder` (whose key order
/// is unspecified): the gateway splices the object into `ready` as it is, so the members keep the
/// order of `ChatInternal.SessionSnapshot`.
struct SessionSnapshotJSON: JSONWritable {
    let snapshot: ChatInternal.SessionSnapshot

    init(_ snapshot: ChatInternal.SessionSnapshot) { self.snapshot = snapshot }

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("workspaces")
        json.beginArray()
        for workspace in snapshot.workspaces {
            json.beginObject()
            json.member("workspace_id", workspace.workspace_id)
            json.endObject()
        }
        json.endArray()
        json.key("channels")
        json.beginArray()
        for channel in snapshot.channels {
            json.beginObject()
            json.member("channel_id", channel.channel_id)
            json.member("workspace_id", channel.workspace_id)
            json.member("name", channel.name)
            json.member("unread_count", channel.unread_count)
            json.endObject()
        }
        json.endArray()
        json.key("dms")
        json.beginArray()
        for room in snapshot.dms {
            json.beginObject()
            json.member("room_id", room.room_id)
            json.member("workspace_id", room.workspace_id)
            json.member("user_id", room.user_id)
            json.member("unread_count", room.unread_count)
            json.endObject()
        }
        json.endArray()
        json.key("rooms")
        json.beginArray()
        for room in snapshot.rooms {
            json.beginObject()
            json.member("room_id", room.room_id)
            json.member("group", room.group)
            json.member("name", room.name)
            json.member("user_id", room.user_id)
            json.member("unread_count", room.unread_count)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }
}
