import Database
import Events
import Foundation
import PostgresNIO

// A channel send in one or two statements instead of six (issue 21): the membership check before
// the form is read also reads the channel's clock and the sender's profile (`ChannelSendContext`),
// and keeps them for the sender's next sends (`SendContextCache`); then one statement advances the
// clock, stores the message and appends its event to the outbox, without BEGIN and COMMIT. The
// statement checks everything the context holds: the sender is in the channel, the clock is
// before the time chosen, the channel's name and alias and the sender's profile are the ones the
// event carries. When it writes nothing — one of those changed, or a retry's nonce is taken — the
// context is dropped and the send takes the transactional path (`postChannelChat`), which handles
// every case. Drafts that read under the channel's lock (a reply's parent, mentions) take that
// path from the start.

/// What a channel send needs before it writes, read with its membership check.
struct ChannelSendContext: Sendable {
    var channel: ChannelRef
    /// The channel's last message time in epoch milliseconds (nil before its first message).
    var lastMessage: Int64?
    var user: UserID
    /// The sender's profile row as read (all nil when chat has none yet).
    var email: String?
    var nickname: String?
    var profileImage: String?
    var alias: Int64?

    /// The sender as a message shows them.
    var sender: ChatEvents.Sender {
        ChatEvents.Sender(user: user, profileRow: (email, nickname, profileImage, alias))
    }
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
/// clock is still before that time, the sender is still in the channel, and the channel's name
/// and alias and the sender's profile are still those of the event; a retry's taken nonce writes
/// nothing (a concurrent retry that takes it first leaves only the clock moved). Row lock and commit are the statement's own: a concurrent send of the channel waits
/// for it, then finds the clock moved and writes nothing. Answers one row when it wrote. It ends
/// with `tail`: the relay's `NOTIFY`, or the outbox row's id when the writer wakes its relay in
/// process (`OutboxRelay.wake(awaiting:)`).
struct ChannelMessageInsert: Sendable {
    static func sql(tail: (String) -> String) -> String {
        """
        WITH clock AS (
            UPDATE channels c SET last_message_at = 'epoch'::timestamptz + $7::float8 * interval '1 millisecond'
            WHERE c.id = $2 AND c.last_message_at < 'epoch'::timestamptz + $7::float8 * interval '1 millisecond'
                AND c.name = $8 AND c.alias IS NOT DISTINCT FROM $9
                AND EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = $2 AND m.user_id = $3)
                AND ($6::text IS NULL OR NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = $2 AND sender_id = $3 AND nonce = $6))
                AND EXISTS (
                    SELECT 1 FROM (SELECT $3) u(id) LEFT JOIN user_profiles p ON p.user_id = u.id
                    WHERE p.email IS NOT DISTINCT FROM $10 AND p.nickname IS NOT DISTINCT FROM $11
                        AND p.profile_image IS NOT DISTINCT FROM $12 AND p.alias IS NOT DISTINCT FROM $13)
            RETURNING c.last_message_at
        ), inserted AS (
            INSERT INTO messages (id, conversation_id, sender_id, content, files, nonce, mentions, created_at)
            SELECT $1, $2, $3, $4, $5, $6, '{}', clock.last_message_at FROM clock
            ON CONFLICT (conversation_id, sender_id, nonce) WHERE nonce IS NOT NULL DO NOTHING
            RETURNING id
        ), outboxed AS (
            \(Outbox.insertSQL(firstParameter: 14, from: "inserted"))
        )
        \(tail("outboxed"))
        """
    }

    static let bindingDataTypes: [PostgresDataType] =
        [.uuid, .uuid, .uuid, .text, .textArray, .text, .int8, .text, .int8, .text, .text, .text, .int8] + OutboxRecord.bindingDataTypes

    var message: StoredMessage
    var nonce: String?
    var time: Int64
    /// What the event says of the channel and the sender.
    var context: ChannelSendContext
    var event: OutboxRecord

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(
            values: message.id.uuid, context.channel.id.uuid, context.user.uuid, message.content, message.files, nonce, time, context.channel.name,
            context.channel.alias, context.email, context.nickname, context.profileImage, context.alias)
        event.bind(into: &bindings)
        return bindings
    }
}

/// `ChannelMessageInsert` notifying the relay at commit.
struct InsertChannelMessageDirectly: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = ChannelMessageInsert.sql(tail: Outbox.notifySQL(from:))
    static var bindingDataTypes: [PostgresDataType] { ChannelMessageInsert.bindingDataTypes }
    var insert: ChannelMessageInsert

    func makeBindings() -> PostgresBindings { insert.makeBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// `ChannelMessageInsert` without `NOTIFY`, answering the outbox row's id: its writer wakes the
/// relay of its own process for that row.
struct InsertChannelMessageDirectlyUnnotified: PostgresPreparedStatement {
    typealias Row = Int64
    static let sql = ChannelMessageInsert.sql(tail: Outbox.idsSQL(from:))
    static var bindingDataTypes: [PostgresDataType] { ChannelMessageInsert.bindingDataTypes }
    var insert: ChannelMessageInsert

    func makeBindings() -> PostgresBindings { insert.makeBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
}

extension MessageStore {
    /// The channel with what a send needs, when `user` is in it (per this service's read model).
    func sendContext(_ id: ChannelID, in workspace: WorkspaceID, member user: UserID, _ c: PostgresConnection) async throws -> ChannelSendContext? {
        let rows = try await c.execute(ChannelSendContextQuery(channel: id.uuid, workspace: workspace.uuid, user: user.uuid), logger: logger)
        for try await (name, alias, last, email, nickname, image, senderAlias) in rows {
            return ChannelSendContext(
                channel: ChannelRef(id: id, workspaceId: workspace, name: name, alias: alias), lastMessage: last, user: user,
                email: email, nickname: nickname, profileImage: image, alias: senderAlias)
        }
        return nil
    }

    /// `ChannelMessageInsert`: true when it stored the message and its event. With `relay` (this
    /// process's, leading: `OutboxRelay.wakesInProcess`) the statement leaves `NOTIFY` out and
    /// the relay is woken for the row it wrote; without, the statement notifies at commit.
    func insertDirectly(
        _ message: StoredMessage, nonce: String?, at time: Int64, context: ChannelSendContext, event: OutboxRecord,
        waking relay: OutboxRelay? = nil, _ c: PostgresConnection
    ) async throws -> Bool {
        let insert = ChannelMessageInsert(message: message, nonce: nonce, time: time, context: context, event: event)
        guard let relay else {
            for try await _ in try await c.execute(InsertChannelMessageDirectly(insert: insert), logger: logger) { return true }
            return false
        }
        var rows: [Int64] = []
        for try await id in try await c.execute(InsertChannelMessageDirectlyUnnotified(insert: insert), logger: logger) { rows.append(id) }
        // A statement that wrote nothing (clock moved, nonce taken) leaves nothing to publish.
        if !rows.isEmpty { relay.wake(awaiting: rows) }
        return !rows.isEmpty
    }
}

extension ChatAPI {
    /// The channel with what a send needs, when `me` is in it: as kept from `me`'s last send to
    /// it, or read. A member of its workspace who is not in it joins it first (`joiningChannel`).
    func channelToSend(_ id: ChannelID, in workspace: WorkspaceID, _ me: UserID) async throws -> ChannelSendContext? {
        let key = SendContextCache.Key(channel: id, workspace: workspace, user: me)
        if let kept = sendContexts.context(for: key) { return kept }
        let read = { try await postgres.withLiveConnection { try await messages.sendContext(id, in: workspace, member: me, $0) } }
        var ready = try await read()
        if ready == nil, try await joiningChannel(id, in: workspace, me) != nil { ready = try await read() }
        if let ready { sendContexts.keep(ready, for: key) }
        return ready
    }

    /// The one-statement send of a draft that reads nothing under the channel's lock (no parent,
    /// no mention), at the channel's next time: now in milliseconds, but at least 1 ms after its
    /// last message as `ready` knows it. Nil when the draft needs the transactional path or the
    /// statement wrote nothing (then `ready` is no longer kept).
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
        // While this process's relay leads, no NOTIFY: the relay is woken here for the row.
        let waking = relay.flatMap { $0.wakesInProcess ? $0 : nil }
        let stored = try await postgres.withLiveConnection { c in
            try await messages.insertDirectly(message, nonce: draft.nonce, at: time, context: ready, event: record, waking: waking, c)
        }
        let key = SendContextCache.Key(channel: ready.channel.id, workspace: ready.channel.workspaceId, user: me)
        guard stored else {
            sendContexts.forget(key)
            return nil
        }
        sendContexts.advance(key, to: time)
        return message
    }

    private func outboxRecord<P: EventPayload>(_ payload: P) throws -> OutboxRecord {
        try Outbox.record(CloudEvent(source: Self.source, data: payload))
    }
}
