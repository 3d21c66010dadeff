import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// Where messages are posted: a channel or a DM room. Its row is the conversation's clock and
/// insert lock (`last_message_at`).
enum Conversation: Sendable {
    case channel(ChannelRef)
    case room(RoomRef)

    var id: UUID {
        switch self {
        case .channel(let channel): channel.id.uuid
        case .room(let room): room.id.uuid
        }
    }

    /// The table holding the conversation's clock (a constant identifier, never input).
    var clockTable: String {
        switch self {
        case .channel: "channels"
        case .room: "dm_rooms"
        }
    }
}

struct ChannelRef: Sendable {
    var id: ChannelID
    var workspaceId: WorkspaceID
    var name: String
    /// The integer alias legacy clients know it by (null before workspace.v1 carried one).
    var alias: Int64? = nil
}

struct StoredMessage: Sendable {
    var id: MessageID
    var sender: ChatEvents.Sender
    var content: String?
    var files: [String]
    var createdAt: Date
    var parentId: MessageID? = nil
    var mentions: [UserID] = []
    var reactions: [ChatEvents.Reaction] = []
    var editedAt: Date? = nil
    /// What a reply shows of its parent (set when the reply is posted).
    var parent: ParentSummary? = nil
}

/// A page of history as Smooth asks for it: `number` 0 is the newest.
struct HistoryPage: Sendable {
    /// The deepest message a page may reach (`number × size`): OFFSET reads every row it skips.
    static let maximumDepth = 100_000
    static let maximumSize = 100

    let number: Int
    let size: Int

    /// `page` and `size` query values (size defaults to `defaultSize`); nil when either is not a
    /// number in range.
    init?(page: String?, size: String?, defaultSize: Int) {
        guard let number = Int(page ?? "0"), number >= 0 else { return nil }
        guard let size = size.map({ Int($0) }) ?? defaultSize, (1...Self.maximumSize).contains(size) else { return nil }
        guard number <= Self.maximumDepth / size else { return nil }
        self.number = number
        self.size = size
    }
}

/// What a reply shows of the message it answers.
struct ParentSummary: Sendable {
    var senderName: String
    var content: String?
    var isDeleted: Bool
}

/// What a send stores besides the sender and the files.
struct MessageDraft: Sendable {
    var content: String?
    var nonce: String?
    var parentId: MessageID?
}

/// SQL of messages (channels and DM rooms share one table). History is keyset on
/// `(conversation_id, created_at, id)`, never OFFSET.
struct MessageStore: Sendable {
    let logger: Logger

    static let epoch = "'1970-01-01T00:00:00Z'::timestamptz"
    static let columns = """
        m.id, m.content, m.files, m.created_at, m.parent_id, m.mentions, m.reactions::text, m.edited_at, \(ProfileProjection.columns(userColumn: "m.sender_id")), p.alias
        """

    /// The channel when `user` is in it (per this service's read model), locked for the
    /// transaction when `lock` (which serialises inserts per channel). Prepared: every send and
    /// every history read asks it.
    func channel(_ id: ChannelID, in workspace: WorkspaceID, member user: UserID, lock: Bool, _ c: PostgresConnection) async throws -> ChannelRef? {
        let rows =
            lock
            ? try await c.execute(ChannelOfMember<ForUpdate>(channel: id.uuid, workspace: workspace.uuid, user: user.uuid), logger: logger)
            : try await c.execute(ChannelOfMember<ForRead>(channel: id.uuid, workspace: workspace.uuid, user: user.uuid), logger: logger)
        for try await (name, alias) in rows {
            return ChannelRef(id: id, workspaceId: workspace, name: name, alias: alias)
        }
        return nil
    }

    /// Lets `user` into a joinable channel of a workspace they are a member of (per the read
    /// models); true when it added them, so the caller asks the workspace to apply the join in the
    /// same transaction. The membership row of the workspace is locked first: a concurrent
    /// `workspace.member-left` then either came first (no join) or removes this row after it.
    /// Concurrent calls for one user and channel add one row: one of them answers true.
    func joinByReading(_ id: ChannelID, in workspace: WorkspaceID, user: UserID, _ c: PostgresConnection) async throws -> Bool {
        var isMember = false
        for try await _ in try await c.query(
            "SELECT 1 FROM workspace_members WHERE workspace_id = \(workspace.uuid) AND user_id = \(user.uuid) FOR SHARE", logger: logger)
        {
            isMember = true
        }
        guard isMember else { return false }
        for try await _ in try await c.query(
            """
            INSERT INTO channel_members (channel_id, user_id)
            SELECT c.id, \(user.uuid) FROM channels c WHERE c.id = \(id.uuid) AND c.workspace_id = \(workspace.uuid) AND c.joinable
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// The channel with integer alias `alias`; when `member` is given, only if they are in it.
    func channel(alias: Int64, member: UserID?, _ c: PostgresConnection) async throws -> ChannelRef? {
        for try await (id, workspace, name) in try await c.query(
            """
            SELECT c.id, c.workspace_id, c.name FROM channels c
            WHERE c.alias = \(alias) AND (\(member?.uuid)::uuid IS NULL
                OR EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = c.id AND m.user_id = \(member?.uuid)))
            """, logger: logger
        ).decode((UUID, UUID, String).self) {
            return ChannelRef(id: ChannelID(id), workspaceId: WorkspaceID(workspace), name: name, alias: alias)
        }
        return nil
    }

    /// Inserts the message with the next time of the (locked) conversation: now in milliseconds,
    /// but at least 1 ms after its previous message, so times are unique per conversation and
    /// follow commit order. The time is computed and stored in SQL (a `Date` round trip can lose a
    /// microsecond and break the exact-millisecond cursor); returns it with the sender's profile,
    /// read in the same (prepared) statement.
    func insert(
        _ id: MessageID, in conversation: Conversation, sender: UserID, draft: MessageDraft, files: [String], mentions: [UserID],
        _ c: PostgresConnection
    ) async throws -> (time: Date, sender: ChatEvents.Sender) {
        let row = InsertedMessage(
            id: id.uuid, conversation: conversation.id, sender: sender.uuid, content: draft.content, files: files, nonce: draft.nonce,
            parent: draft.parentId?.uuid, mentions: mentions.map(\.uuid))
        let rows =
            switch conversation {
            case .channel: try await c.execute(InsertMessage<ChannelClock>(row), logger: logger)
            case .room: try await c.execute(InsertMessage<RoomClock>(row), logger: logger)
            }
        for try await (time, email, nickname, image, alias) in rows {
            let profile = ChatEvents.Sender(user: sender, profileRow: (email, nickname, image, alias))
            return (time, profile)
        }
        throw ChatStoreError("conversation \(conversation.id) vanished while locked")
    }

    /// The message `sender` already sent with `nonce` in this conversation (a retried send), if any.
    func message(sender: UserID, nonce: String, in conversation: Conversation, _ c: PostgresConnection) async throws -> StoredMessage? {
        try await messages(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id
                WHERE m.conversation_id = \(conversation.id) AND m.sender_id = \(sender.uuid) AND m.nonce = \(nonce)
                """, logger: logger)
        ).first
    }

    /// Whether `id` is a message of the conversation that is not deleted.
    func isLive(_ id: MessageID, in conversation: Conversation, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            SELECT 1 FROM messages WHERE id = \(id.uuid) AND conversation_id = \(conversation.id) AND deleted_at IS NULL
            """, logger: logger)
        {
            return true
        }
        return false
    }

    func sender(_ user: UserID, _ c: PostgresConnection) async throws -> ChatEvents.Sender {
        for try await (email, nickname, image, alias) in try await c.query(
            """
            SELECT p.email, p.nickname, p.profile_image, p.alias FROM user_profiles p WHERE p.user_id = \(user.uuid)
            """, logger: logger
        ).decode((String, String, String?, Int64?).self) {
            return ChatEvents.Sender(userId: user, email: email, nickname: nickname, profileImage: image, alias: alias)
        }
        return ChatEvents.Sender(userId: user, email: "", nickname: "", profileImage: nil)
    }

    /// Messages strictly newer than `after` (epoch milliseconds; all when nil), oldest first. The
    /// bound is built in SQL from the integer, exactly (a bound `Date` may land a microsecond early).
    func history(_ conversation: Conversation, after: Int64?, _ c: PostgresConnection) async throws -> [StoredMessage] {
        let rows: PostgresRowSequence
        if let after {
            rows = try await c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id
                WHERE m.conversation_id = \(conversation.id) AND m.created_at > \(unescaped: Self.epoch) + \(after) * interval '1 millisecond'
                  AND m.deleted_at IS NULL
                ORDER BY m.created_at, m.id
                """, logger: logger)
        } else {
            rows = try await c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id
                WHERE m.conversation_id = \(conversation.id) AND m.deleted_at IS NULL
                ORDER BY m.created_at, m.id
                """, logger: logger)
        }
        return try await messages(rows)
    }

    /// Page `page` (0 = the newest) of `size` live messages, oldest first within the page (client
    /// contract §2.1: Smooth pages newest-first). The one read here that skips rows (OFFSET over
    /// the history index): callers bound `page × size` (`HistoryPage.maximumDepth`).
    func page(_ conversation: Conversation, _ page: HistoryPage, _ c: PostgresConnection) async throws -> [StoredMessage] {
        let newestFirst = try await messages(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id
                WHERE m.conversation_id = \(conversation.id) AND m.deleted_at IS NULL
                ORDER BY m.created_at DESC, m.id DESC LIMIT \(page.size) OFFSET \(page.number * page.size)
                """, logger: logger))
        return newestFirst.reversed()
    }

    /// The messages `ids` names (any conversation, deleted ones too): what a reply shows of its parent.
    func parents(_ ids: [MessageID], _ c: PostgresConnection) async throws -> [MessageID: ParentSummary] {
        guard !ids.isEmpty else { return [:] }
        var result: [MessageID: ParentSummary] = [:]
        for try await (id, content, deleted, nickname) in try await c.query(
            """
            SELECT m.id, m.content, m.deleted_at IS NOT NULL, coalesce(p.nickname, '') FROM messages m
            LEFT JOIN user_profiles p ON p.user_id = m.sender_id WHERE m.id = ANY(\(ids.map(\.uuid)))
            """, logger: logger
        ).decode((UUID, String?, Bool, String).self) {
            result[MessageID(id)] = ParentSummary(senderName: nickname, content: content, isDeleted: deleted)
        }
        return result
    }

    /// Messages of others strictly newer than `after` (epoch milliseconds).
    func unreadCount(_ conversation: Conversation, after: Int64, reader: UserID, _ c: PostgresConnection) async throws -> Int {
        for try await count in try await c.query(
            """
            SELECT count(*) FROM messages
            WHERE conversation_id = \(conversation.id) AND created_at > \(unescaped: Self.epoch) + \(after) * interval '1 millisecond'
              AND sender_id <> \(reader.uuid) AND deleted_at IS NULL
            """, logger: logger
        ).decode(Int64.self) {
            return Int(count)
        }
        return 0
    }

    /// Whether `path` is an attachment of a message in a conversation `user` may read: a channel
    /// they are in, or a DM room of theirs in a workspace they still belong to.
    func canSee(file path: String, user: UserID, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            SELECT 1 FROM messages m
            WHERE m.files <> '{}' AND m.files @> ARRAY[\(path)]::text[] AND (
                EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = m.conversation_id AND cm.user_id = \(user.uuid))
                OR EXISTS (SELECT 1 FROM dm_rooms r JOIN workspace_members w ON w.workspace_id = r.workspace_id AND w.user_id = \(user.uuid)
                           WHERE r.id = m.conversation_id AND (r.user_low = \(user.uuid) OR r.user_high = \(user.uuid))))
            LIMIT 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// Whether the stored file `name` is an attachment of a message that is not deleted (in a
    /// channel or a DM room: its path has either prefix).
    func isLiveAttachment(named name: String, _ c: PostgresConnection) async throws -> Bool {
        let paths = [ChatFiles.Prefix.channel, .dm].map { $0.rawValue + name }
        for try await _ in try await c.query(
            """
            SELECT 1 FROM messages m WHERE m.files <> '{}' AND m.files && \(paths)::text[] AND m.deleted_at IS NULL LIMIT 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// Rows selected with `columns` (from `messages m LEFT JOIN user_profiles p`).
    func messages(_ rows: PostgresRowSequence) async throws -> [StoredMessage] {
        var result: [StoredMessage] = []
        for try await (id, content, files, createdAt, parent, mentions, reactions, editedAt, sender, email, nickname, image, alias) in rows.decode(
            (UUID, String?, [String], Date, UUID?, [UUID], String?, Date?, UUID, String, String, String?, Int64?).self
        ) {
            result.append(
                StoredMessage(
                    id: MessageID(id),
                    sender: ChatEvents.Sender(userId: UserID(sender), email: email, nickname: nickname, profileImage: image, alias: alias),
                    content: content, files: files, createdAt: createdAt, parentId: parent.map(MessageID.init), mentions: mentions.map(UserID.init),
                    reactions: try reactions.map(ReactionStore.decode) ?? [], editedAt: editedAt
                ))
        }
        return result
    }
}

struct ChatStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ChatEvents.Sender {
    /// The sender as chat's profile row has them; a user chat has no profile for yet shows an
    /// empty email and nickname.
    init(user: UserID, profileRow row: (email: String?, nickname: String?, profileImage: String?, alias: Int64?)) {
        self.init(userId: user, email: row.email ?? "", nickname: row.nickname ?? "", profileImage: row.profileImage, alias: row.alias)
    }
}
