import Foundation

extension ChatEvents {
    /// A personal room (friends or a group, outside any workspace) changed: created, renamed, given
    /// an icon, joined, left or deleted. Keyed by the room id on `chat.message.v1`, so it is ordered
    /// with the room's messages and `chat-fanout` delivers it to the gateways following the room
    /// (which end the subscriptions of `removed` users). The payload is the room as it is after
    /// the change, so an analytics consumer needs no other event to know it.
    public struct RoomChanged: EventPayload {
        public enum Change: String, Codable, Sendable {
            case created, renamed, icon, joined, left, deleted
        }
        public static let eventType = "chat.room.changed"
        public static let topic = Topic.chatMessage
        public var roomId: RoomID
        /// The room's integer alias (Smooth's room id).
        public var alias: Int64
        public var change: Change
        /// Who made the change.
        public var actorId: UserID
        /// Whether it is a group room (a name, an icon, an owner) rather than two friends' room.
        public var group: Bool
        public var name: String?
        /// The icon's stored path (chat's volume), when a group room has one.
        public var icon: String?
        public var ownerId: UserID?
        /// The members after the change (empty once deleted).
        public var members: [UserID]
        /// Who joined (`joined`, `created`) or left (`left`, `deleted`) with this change.
        public var added: [UserID]
        public var removed: [UserID]
        public var subject: String { roomId.description }

        public init(
            roomId: RoomID, alias: Int64, change: Change, actorId: UserID, group: Bool, name: String?, icon: String?, ownerId: UserID?,
            members: [UserID], added: [UserID] = [], removed: [UserID] = []
        ) {
            self.roomId = roomId
            self.alias = alias
            self.change = change
            self.actorId = actorId
            self.group = group
            self.name = name
            self.icon = icon
            self.ownerId = ownerId
            self.members = members
            self.added = added
            self.removed = removed
        }
    }
}
