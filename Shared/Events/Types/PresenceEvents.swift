import Foundation

/// `presence.v1` (compacted, keyed by user id): each user's status, published by `presence`
/// only when it changes (a user going from three live sessions to two is no event).
public enum PresenceEvents {
    public enum Status: String, Codable, Sendable {
        /// At least one live session at a live gateway.
        case online
        /// No live session.
        case offline
    }

    public struct StatusChanged: EventPayload {
        public static let eventType = "presence.status-changed"
        public static let topic = Topic.presence
        public var userId: UserID
        public var status: Status
        /// Online: when the user came online; offline: when their last session ended (or its
        /// gateway was declared dead).
        public var lastSeen: Date
        /// The user's workspaces when the status changed: who shares one with the user sees the
        /// change (the gateway's `presence.batch` dispatch goes to those workspaces' native sessions).
        public var workspaceIds: [WorkspaceID]
        public var subject: String { userId.description }

        public init(userId: UserID, status: Status, lastSeen: Date, workspaceIds: [WorkspaceID]) {
            self.userId = userId
            self.status = status
            self.lastSeen = Timestamp.truncated(lastSeen)
            self.workspaceIds = workspaceIds
        }
    }
}
