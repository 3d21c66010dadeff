import Foundation
import PostgresNIO

// The statements of the send path, prepared once per connection: PostgreSQL parses and plans
// them once, and each later send binds and executes (issue 21: a send's SQL was half of
// PostgreSQL's CPU). Their parameter types are spelled out so a first execution with a null
// binds the same statement as every later one.

/// Whether `ChannelOfMember` locks the channel row (a send) or only reads it.
protocol ChannelRowLock: Sendable {
    static var clause: String { get }
}

enum ForRead: ChannelRowLock {
    static let clause = ""
}

/// Serialises the channel's inserts until the transaction ends (`MessageStore.insert`).
enum ForUpdate: ChannelRowLock {
    static let clause = "FOR NO KEY UPDATE OF c"
}

/// The channel's name and alias when the user is in it (per chat's read model).
struct ChannelOfMember<Lock: ChannelRowLock>: PostgresPreparedStatement {
    typealias Row = (String, Int64?)
    static var sql: String {
        """
        SELECT c.name, c.alias FROM channels c JOIN channel_members m ON m.channel_id = c.id
        WHERE c.id = $1 AND c.workspace_id = $2 AND m.user_id = $3 \(Lock.clause)
        """
    }
    static var bindingDataTypes: [PostgresDataType] { [.uuid, .uuid, .uuid] }

    var channel: UUID
    var workspace: UUID
    var user: UUID

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(channel)
        bindings.append(workspace)
        bindings.append(user)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The table holding a conversation's clock and insert lock (`last_message_at`).
protocol ConversationClock: Sendable {
    static var table: String { get }
}

enum ChannelClock: ConversationClock {
    static let table = "channels"
}

enum RoomClock: ConversationClock {
    static let table = "dm_rooms"
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
struct InsertMessage<Clock: ConversationClock>: PostgresPreparedStatement {
    typealias Row = (Date, String?, String?, String?, Int64?)
    static var sql: String {
        """
        WITH clock AS (
            UPDATE \(Clock.table) SET last_message_at =
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

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(message.id)
        bindings.append(message.conversation)
        bindings.append(message.sender)
        bindings.append(message.content)
        bindings.append(message.files)
        bindings.append(message.nonce)
        bindings.append(message.parent)
        bindings.append(message.mentions)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
