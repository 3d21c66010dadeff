import Database
import Foundation
import PostgresNIO

// The statements of the send path, prepared once per connection: PostgreSQL parses and plans
// them once, and each later send binds and executes (issue 21: a send's SQL was half of
// PostgreSQL's CPU). Their parameter types are spelled out so a first execution with a null
// binds the same statement as every later one.

/// A piece of SQL chosen by type: a statement generic over it is one prepared statement per choice.
protocol SQLChoice: Sendable {
    static var sql: String { get }
}

/// `ChannelOfMember` only reads the channel row.
enum ForRead: SQLChoice {
    static let sql = ""
}

/// `ChannelOfMember` locks the channel row until the transaction ends: it serialises the
/// channel's inserts (`MessageStore.insert`).
enum ForUpdate: SQLChoice {
    static let sql = "FOR NO KEY UPDATE OF c"
}

/// The channel's name and alias when the user is in it (per chat's read model).
struct ChannelOfMember<Lock: SQLChoice>: PostgresPreparedStatement {
    typealias Row = (String, Int64?)
    static var sql: String {
        """
        SELECT c.name, c.alias FROM channels c JOIN channel_members m ON m.channel_id = c.id
        WHERE c.id = $1 AND c.workspace_id = $2 AND m.user_id = $3 \(Lock.sql)
        """
    }
    static var bindingDataTypes: [PostgresDataType] { [.uuid, .uuid, .uuid] }

    var channel: UUID
    var workspace: UUID
    var user: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: channel, workspace, user) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The table holding a channel's clock and insert lock (`last_message_at`).
enum ChannelClock: SQLChoice {
    static let sql = "channels"
}

/// The table holding a DM room's clock and insert lock.
enum RoomClock: SQLChoice {
    static let sql = "dm_rooms"
}

/// The values of a message `InsertMessage` stores.
struct InsertedMessage: Sendable {
    var id: UUID
    var conversation: UUID
    var sender: UUID
    var content: String?
    var files: [String]
    var nonce: String?
    var parent: UUID?
    var mentions: [UUID]
}

/// Stores a message at the conversation's next time (see `MessageStore.insert`) and answers that
/// time with the sender's profile (nulls when chat has none yet).
struct InsertMessage<Clock: SQLChoice>: PostgresPreparedStatement {
    typealias Row = (Date, String?, String?, String?, Int64?)
    static var sql: String {
        """
        WITH clock AS (
            UPDATE \(Clock.sql) SET last_message_at =
                greatest(date_trunc('milliseconds', clock_timestamp()), last_message_at + interval '1 millisecond')
            WHERE id = $2 RETURNING last_message_at
        ), inserted AS (
            INSERT INTO messages (id, conversation_id, sender_id, content, files, nonce, parent_id, mentions, created_at)
            SELECT $1, $2, $3, $4, $5, $6, $7, $8, clock.last_message_at FROM clock
            RETURNING created_at
        )
        SELECT i.created_at, p.email, p.nickname, p.profile_image, p.alias
        FROM inserted i LEFT JOIN user_profiles p ON p.user_id = $3
        """
    }
    static var bindingDataTypes: [PostgresDataType] { [.uuid, .uuid, .uuid, .text, .textArray, .text, .uuid, .uuidArray] }

    var message: InsertedMessage

    init(_ message: InsertedMessage) {
        self.message = message
    }

    func makeBindings() -> PostgresBindings {
        PostgresBindings(
            values: message.id, message.conversation, message.sender, message.content, message.files, message.nonce, message.parent, message.mentions)
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
