import Database
import Foundation
import PostgresNIO

// Statements of the planner (issue 21: they replace four round trips per message), each prepared
// once per connection. The channel ones take a whole run of a poll's channel messages (parallel
// arrays, one entry per message), so a run costs two round trips, not two per message. With the
// arrays' lengths known a custom plan looks cheaper, so PostgreSQL plans them at each execution
// (once per run; forcing generic plans measured the same, docs/benchmarks.md part 9), as it does
// the room's `RoomOfflineDevices` for a DM's one or two readers. Only `BumpRoomUnreads` settles
// on a generic plan (`PlannerStatementsTests`). One statement doing bump and devices together (a
// data-modifying CTE) cost PostgreSQL more than the round trip it saved (part 7).

/// A device to notify of a message: its reader, token, the reader's setting for the
/// conversation, badge (unread total) and the workspace's name.
typealias PlannedDevice = (user: UUID, token: String, mode: String, badge: Int64, workspace: String?)

/// The device tokens of the readers `r(u)` of `source` who are not online, each with their
/// setting for `conversation`, badge (unread total) and the name of `workspace` (NULL for none),
/// after `leading` columns.
private func offlineDevicesSQL(leading: String = "", source: String, conversation: String, workspace: String) -> String {
    """
    SELECT \(leading)r.u, t.token, coalesce(s.mode, 'all'), (SELECT coalesce(sum(count), 0) FROM unread_counts n WHERE n.user_id = r.u)::int8,
        (SELECT name FROM workspaces WHERE id = \(workspace))
    FROM \(source)
    JOIN device_tokens t ON t.user_id = r.u
    LEFT JOIN notification_settings s ON s.user_id = r.u AND s.conversation_id = \(conversation)
    LEFT JOIN presence p ON p.user_id = r.u
    WHERE NOT coalesce(p.online, false)
    """
}

/// One more unread message per channel message of a run (`channels[i]` sent by `senders[i]`)
/// for each of its readers, online or not (the badge moves for everyone): the channel's members
/// other than the sender, per push's read model. Rows in key order, so two transactions bumping
/// the same counters lock them in the same order.
struct BumpChannelUnreads: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        INSERT INTO unread_counts (user_id, conversation_id, count)
        SELECT m.user_id, m.channel_id, count(*) FROM unnest($1::uuid[], $2::uuid[]) AS x(channel, sender)
        JOIN channel_members m ON m.channel_id = x.channel AND m.user_id <> x.sender
        GROUP BY m.user_id, m.channel_id ORDER BY m.user_id, m.channel_id
        ON CONFLICT (user_id, conversation_id) DO UPDATE SET count = unread_counts.count + EXCLUDED.count
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuidArray, .uuidArray]

    var channels: [UUID]
    var senders: [UUID]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channels, senders) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// The devices to notify of each channel message of a run (after `BumpChannelUnreads`, so
/// badges count the whole run): the message's index in the run (from 1) and the device.
struct ChannelOfflineDevices: PostgresPreparedStatement {
    typealias Row = (index: Int64, device: PlannedDevice)
    static let sql = offlineDevicesSQL(
        leading: "x.i, ",
        source: """
            unnest($1::uuid[], $2::uuid[], $3::uuid[]) WITH ORDINALITY AS x(channel, sender, workspace, i)
            JOIN LATERAL (SELECT user_id FROM channel_members WHERE channel_id = x.channel AND user_id <> x.sender) AS r(u) ON true
            """,
        conversation: "x.channel", workspace: "x.workspace")
    static let bindingDataTypes: [PostgresDataType] = [.uuidArray, .uuidArray, .uuidArray]

    var channels: [UUID]
    var senders: [UUID]
    var workspaces: [UUID]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channels, senders, workspaces) }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (index, user, token, mode, badge, workspace) = try row.decode((Int64, UUID, String, String, Int64, String?).self)
        return (index, (user, token, mode, badge, workspace))
    }
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
struct RoomOfflineDevices: PostgresPreparedStatement {
    typealias Row = PlannedDevice
    static let sql = offlineDevicesSQL(source: "(SELECT DISTINCT unnest($2::uuid[])) AS r(u)", conversation: "$1", workspace: "$3")
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
