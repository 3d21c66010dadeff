import Database
import Events
import Foundation
import PostgresNIO

// A channel send in two statements instead of six (issue 21): the membership check before the
// form is read also reads the channel's clock and the sender's profile (`ChannelSendContext`);
// then one statement advances the clock, stores the message and appends its event to the outbox,
// without BEGIN and COMMIT. When that statement writes nothing — another send moved the clock
// past the time chosen, the sender left, a retry's nonce is taken — the send takes the
// transactional path (`postChannelChat`), which handles every case. Drafts that read under the
// channel's lock (a reply's parent, mentions) take that path from the start.

/// What a channel send needs before it writes, read with its membership check.
struct ChannelSendContext: Sendable {
    var channel: ChannelRef
    /// The channel's last message time in epoch milliseconds (nil before its first message).
    var lastMessage: Int64?
    var sender: ChatEvents.Sender
}

/// The channel's name, alias and clock, and the sender's profile, when the user is in the channel
/// (per chat's read model).
struct ChannelSendContextQuery: PostgresPreparedStatement {
    typealias Row = (String, Int64?, Int64?, String?, String?, String?, Int64?)
    static let sql = """
        SELECT c.name, c.alias,
            CASE WHEN c.last_message_at = '-infinity' THEN NULL ELSE (extract(epoch FROM c.last_message_at) * 1000)::int8 END,
            p.email, p.nickname, p.profile_image, p.alias
        FROM channels c JOIN channel_members m ON m.channel_id = c.id LEFT JOIN user_profiles p ON p.user_id = m.user_id
        WHERE c.id = $1 AND c.workspace_id = $2 AND m.user_id = $3
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid, .uuid]

    var channel: UUID
    var workspace: UUID
    var user: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, workspace, user) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// Stores a message at time `$7` (epoch milliseconds) and appends its event, only if the channel's
/// clock is still before that time and the sender is still in the channel; a retry's taken nonce
/// writes nothing. Row lock and commit are the statement's own: a concurrent send of the channel
/// waits for it, then finds the clock moved and writes nothing. Answers one row when it wrote.
struct InsertChannelMessageDirectly: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        WITH clock AS (
            UPDATE channels c SET last_message_at = 'epoch'::timestamptz + $7::float8 * interval '1 millisecond'
            WHERE c.id = $2 AND c.last_message_at < 'epoch'::timestamptz + $7::float8 * interval '1 millisecond'
                AND EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = $2 AND m.user_id = $3)
            RETURNING c.last_message_at
        ), inserted AS (
            INSERT INTO messages (id, conversation_id, sender_id, content, files, nonce, mentions, created_at)
            SELECT $1, $2, $3, $4, $5, $6, '{}', clock.last_message_at FROM clock
            ON CONFLICT (conversation_id, sender_id, nonce) WHERE nonce IS NOT NULL DO NOTHING
            RETURNING id
        ), outboxed AS (
            \(Outbox.insertSQL(firstParameter: 8, from: "inserted"))
        )
        \(Outbox.notifySQL(from: "outboxed"))
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid, .uuid, .text, .textArray, .text, .int8] + OutboxRecord.bindingDataTypes

    var message: StoredMessage
    var channel: UUID
    var nonce: String?
    var time: Int64
    var event: OutboxRecord

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(values: message.id.uuid, channel, message.sender.userId.uuid, message.content, message.files, nonce, time)
        event.bind(into: &bindings)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

extension MessageStore {
    /// The channel with what a send needs, when `user` is in it (per this service's read model).
    func sendContext(_ id: ChannelID, in workspace: WorkspaceID, member user: UserID, _ c: PostgresConnection) async throws -> ChannelSendContext? {
        let rows = try await c.execute(ChannelSendContextQuery(channel: id.uuid, workspace: workspace.uuid, user: user.uuid), logger: logger)
        for try await (name, alias, last, email, nickname, image, senderAlias) in rows {
            return ChannelSendContext(
                channel: ChannelRef(id: id, workspaceId: workspace, name: name, alias: alias), lastMessage: last,
                sender: ChatEvents.Sender(userId: user, email: email ?? "", nickname: nickname ?? "", profileImage: image, alias: senderAlias))
        }
        return nil
    }

    /// `InsertChannelMessageDirectly`: true when it stored the message and its event.
    func insertDirectly(
        _ message: StoredMessage, nonce: String?, in channel: ChannelID, at time: Int64, event: OutboxRecord, _ c: PostgresConnection
    ) async throws -> Bool {
        let statement = InsertChannelMessageDirectly(message: message, channel: channel.uuid, nonce: nonce, time: time, event: event)
        for try await _ in try await c.execute(statement, logger: logger) { return true }
        return false
    }
}

extension ChatAPI {
    /// The channel with what a send needs, when `me` is in it; a member of its workspace who is
    /// not joins it first (`joiningChannel`).
    func channelToSend(_ id: ChannelID, in workspace: WorkspaceID, _ me: UserID) async throws -> ChannelSendContext? {
        let read = { try await postgres.withLiveConnection { try await messages.sendContext(id, in: workspace, member: me, $0) } }
        if let ready = try await read() { return ready }
        guard try await joiningChannel(id, in: workspace, me) != nil else { return nil }
        return try await read()
    }

    /// The one-statement send of a draft that reads nothing under the channel's lock (no parent,
    /// no mention), at the channel's next time: now in milliseconds, but at least 1 ms after its
    /// last message as read with `ready`. Nil when the draft needs the transactional path or the
    /// statement wrote nothing.
    func postDirectly(
        _ draft: MessageDraft, files: [String], by me: UserID, in ready: ChannelSendContext, event: (StoredMessage) -> any EventPayload
    ) async throws -> StoredMessage? {
        guard draft.parentId == nil, !Mentions.mayMention(draft.content) else { return nil }
        let now = Timestamp.milliseconds(Date())
        let time = ready.lastMessage.map { max(now, $0 + 1) } ?? now
        let message = StoredMessage(
            id: MessageID.generate(), sender: ready.sender, content: draft.content, files: files,
            createdAt: Date(timeIntervalSince1970: Double(time) / 1000))
        let record = try outboxRecord(event(message))
        let stored = try await postgres.withLiveConnection { c in
            try await messages.insertDirectly(message, nonce: draft.nonce, in: ready.channel.id, at: time, event: record, c)
        }
        return stored ? message : nil
    }

    private func outboxRecord<P: EventPayload>(_ payload: P) throws -> OutboxRecord {
        try Outbox.record(CloudEvent(source: Self.source, data: payload))
    }
}
