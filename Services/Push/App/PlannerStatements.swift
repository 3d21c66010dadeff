import Database
import Foundation
import PostgresNIO

// The planner runs one of these for every message, so each is prepared once per connection
// (PostgreSQL parses and plans it once) and does the whole plan in one round trip (issue 21).

/// A device to notify of a message: its reader, token, the reader's setting for the
/// conversation, badge (unread total, this message counted) and the workspace's name.
typealias PlannedDevice = (user: UUID, token: String, mode: String, badge: Int64, workspace: String?)

/// What both plans share: each reader's unread count for the conversation moves by one (the badge
/// moves for every reader, online or not), and the answer is the device tokens of the readers who
/// are not online. The main query reads the statement's snapshot, from before the count moved, so
/// the badge is the unread total then plus this message.
private func planSQL(readers: String) -> String {
    """
    WITH readers AS (\(readers)),
    bumped AS (
        INSERT INTO unread_counts (user_id, conversation_id, count) SELECT u, $1, 1 FROM readers
        ON CONFLICT (user_id, conversation_id) DO UPDATE SET count = unread_counts.count + 1
    )
    SELECT r.u, t.token, coalesce(s.mode, 'all'),
        (SELECT coalesce(sum(count), 0) FROM unread_counts n WHERE n.user_id = r.u)::int8 + 1,
        (SELECT name FROM workspaces WHERE id = $3)
    FROM readers r
    JOIN device_tokens t ON t.user_id = r.u
    LEFT JOIN notification_settings s ON s.user_id = r.u AND s.conversation_id = $1
    LEFT JOIN presence p ON p.user_id = r.u
    WHERE NOT coalesce(p.online, false)
    """
}

/// A channel message's plan: its readers are the channel's members other than the sender (per
/// push's read model).
struct PlanChannelMessage: PostgresPreparedStatement {
    typealias Row = PlannedDevice
    static let sql = planSQL(readers: "SELECT user_id AS u FROM channel_members WHERE channel_id = $1 AND user_id <> $2")
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid, .uuid]

    var channel: UUID
    var sender: UUID
    var workspace: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, sender, workspace) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((UUID, String, String, Int64, String?).self) }
}

/// A direct message's plan: its readers are given (a room's participants still entitled to it,
/// the sender excluded by the caller); `workspace` is nil for a personal room.
struct PlanRoomMessage: PostgresPreparedStatement {
    typealias Row = PlannedDevice
    static let sql = planSQL(readers: "SELECT DISTINCT unnest($2::uuid[]) AS u")
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuidArray, .uuid]

    var room: UUID
    var readers: [UUID]
    var workspace: UUID?

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(room)
        bindings.append(readers)
        bindings.append(workspace)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((UUID, String, String, Int64, String?).self) }
}
