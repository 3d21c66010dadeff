import Database
import Foundation
import PostgresNIO

// The planner runs two of these for every message (issue 21: they replace four round trips),
// each prepared once per connection. The channel ones settle on a generic plan after five
// executions (`PlannerStatementsTests`); one statement doing both (a data-modifying CTE) was
// replanned on every execution, which cost PostgreSQL more than the round trip saved. The room's
// `RoomOfflineDevices` is still planned per message: a DM's one or two readers in a constant
// array make the custom plan look cheaper.

/// A device to notify of a message: its reader, token, the reader's setting for the
/// conversation, badge (unread total) and the workspace's name.
typealias PlannedDevice = (user: UUID, token: String, mode: String, badge: Int64, workspace: String?)

/// A statement answering `PlannedDevice`s (its SQL from `offlineDevicesSQL`).
protocol OfflineDevicesStatement: PostgresPreparedStatement where Row == PlannedDevice {}

extension OfflineDevicesStatement {
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((UUID, String, String, Int64, String?).self) }
}

/// The device tokens of `readers` who are not online, with each one's setting for the
/// conversation (`$1`), badge and the name of the workspace (`$3`, NULL for none).
private func offlineDevicesSQL(readers: String) -> String {
    """
    SELECT r.u, t.token, coalesce(s.mode, 'all'), (SELECT coalesce(sum(count), 0) FROM unread_counts n WHERE n.user_id = r.u)::int8,
        (SELECT name FROM workspaces WHERE id = $3)
    FROM (\(readers)) AS r(u)
    JOIN device_tokens t ON t.user_id = r.u
    LEFT JOIN notification_settings s ON s.user_id = r.u AND s.conversation_id = $1
    LEFT JOIN presence p ON p.user_id = r.u
    WHERE NOT coalesce(p.online, false)
    """
}

/// One more unread message in the channel for each of its readers (the badge moves for every
/// reader, online or not): the members other than the sender, per push's read model.
struct BumpChannelUnreads: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        INSERT INTO unread_counts (user_id, conversation_id, count)
        SELECT user_id, $1, 1 FROM channel_members WHERE channel_id = $1 AND user_id <> $2
        ON CONFLICT (user_id, conversation_id) DO UPDATE SET count = unread_counts.count + 1
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid]

    var channel: UUID
    var sender: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, sender) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// The devices to notify of a channel message (after `BumpChannelUnreads`, so badges count it).
struct ChannelOfflineDevices: OfflineDevicesStatement {
    static let sql = offlineDevicesSQL(readers: "SELECT user_id FROM channel_members WHERE channel_id = $1 AND user_id <> $2")
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuid, .uuid]

    var channel: UUID
    var sender: UUID
    var workspace: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, sender, workspace) }
}

/// One more unread message in a room for each of the given readers.
struct BumpRoomUnreads: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        INSERT INTO unread_counts (user_id, conversation_id, count) SELECT DISTINCT unnest($2::uuid[]), $1, 1
        ON CONFLICT (user_id, conversation_id) DO UPDATE SET count = unread_counts.count + 1
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .uuidArray]

    var room: UUID
    var readers: [UUID]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: room, readers) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// The devices to notify of a direct message (after `BumpRoomUnreads`); `workspace` is nil for a
/// personal room.
struct RoomOfflineDevices: OfflineDevicesStatement {
    static let sql = offlineDevicesSQL(readers: "SELECT DISTINCT unnest($2::uuid[])")
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
}
