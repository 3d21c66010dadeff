import Foundation

/// `auth.user.v1`, keyed by user id. Consumers keep projections of member profiles from these.
public enum AuthEvents {
    public struct UserRegistered: EventPayload {
        public static let eventType = "auth.user.registered"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var email: String
        public var nickname: String
        public var profileImage: String?
        public var provider: String?
        public var createdAt: Date
        public var subject: String { userId.description }

        public init(userId: UserID, email: String, nickname: String, profileImage: String?, provider: String?, createdAt: Date) {
            self.userId = userId
            self.email = email
            self.nickname = nickname
            self.profileImage = profileImage
            self.provider = provider
            self.createdAt = Timestamp.truncated(createdAt)
        }
    }

    /// The profile as it is after the change (nickname, phone or image).
    public struct UserProfileUpdated: EventPayload {
        public static let eventType = "auth.user.profile-updated"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var email: String
        public var nickname: String
        public var profileImage: String?
        public var subject: String { userId.description }

        public init(userId: UserID, email: String, nickname: String, profileImage: String?) {
            self.userId = userId
            self.email = email
            self.nickname = nickname
            self.profileImage = profileImage
        }
    }

    public struct UserDeleted: EventPayload {
        public static let eventType = "auth.user.deleted"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var subject: String { userId.description }

        public init(userId: UserID) { self.userId = userId }
    }
}

extension AuthEvents {
    /// A friendship between two users changed; published once per side (keyed by `userId`) so
    /// each user's events stay in order.
    public struct FriendshipChanged: EventPayload {
        public enum State: String, Codable, Sendable {
            case requested, accepted, banned, removed
        }
        public static let eventType = "auth.friendship.changed"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var friendId: UserID
        public var friendshipId: UUID
        public var state: State
        public var subject: String { userId.description }

        public init(userId: UserID, friendId: UserID, friendshipId: UUID, state: State) {
            self.userId = userId
            self.friendId = friendId
            self.friendshipId = friendshipId
            self.state = state
        }
    }
}
