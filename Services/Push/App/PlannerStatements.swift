import Database
import Foundation
import PostgresNIO

// The planner runs these for every chat message, so each is prepared once per connection
// (PostgreSQL parses and plans it once; issue 21).

/// A channel's readers other than the sender (per push's read model).
struct ChannelReaders: PostgresPreparedStatement {
    typealias Row = UUID
    static let sql = "SELECT user_id FROM channel_members WHERE channel_id = $1 AND user_id <> $2"
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid]

    var channel: UUID
    var sender: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, sender) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}

/// A workspace's name, for the notification's title.
struct WorkspaceName: PostgresPreparedStatement {
    typealias Row = String
    static let sql = "SELECT name FROM workspaces WHERE id = $1"
    static let bindingDataTypes: [PostgresDataType] = [.uuid]

    var workspace: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: workspace) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
}

/// One more unread message in the conversation for each reader (the badge).
struct BumpUnreadCounts: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        INSERT INTO unread_counts (user_id, conversation_id, count) SELECT unnest($1::uuid[]), $2, 1
        ON CONFLICT (user_id, conversation_id) DO UPDATE SET count = unread_counts.count + 1
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuidArray, .uuid]

    var readers: [UUID]
    var conversation: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: readers, conversation) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// The device tokens of readers who are not online, with each reader's setting for the
/// conversation and badge (their unread total).
struct OfflineDevices: PostgresPreparedStatement {
    typealias Row = (UUID, String, String, Int64)
    static let sql = """
        SELECT r.u, t.token, coalesce(s.mode, 'all'), (SELECT coalesce(sum(count), 0) FROM unread_counts n WHERE n.user_id = r.u)::int8
        FROM unnest($1::uuid[]) AS r(u)
        JOIN device_tokens t ON t.user_id = r.u
        LEFT JOIN notification_settings s ON s.user_id = r.u AND s.conversation_id = $2
        LEFT JOIN presence p ON p.user_id = r.u
        WHERE NOT coalesce(p.online, false)
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuidArray, .uuid]

    var readers: [UUID]
    var conversation: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: readers, conversation) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
