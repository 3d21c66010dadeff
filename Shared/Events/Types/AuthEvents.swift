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
        /// The user's integer alias for legacy clients (`Database.IntegerAlias`); nil in events
        /// written before aliases existed.
        public var alias: Int64?
        /// The user's four-character tag (`name#code`), nil in older events.
        public var code: String?
        public var subject: String { userId.description }

        public init(
            userId: UserID, email: String, nickname: String, profileImage: String?, provider: String?, createdAt: Date, alias: Int64? = nil,
            code: String? = nil
        ) {
            self.userId = userId
            self.email = email
            self.nickname = nickname
            self.profileImage = profileImage
            self.provider = provider
            self.createdAt = Timestamp.truncated(createdAt)
            self.alias = alias
            self.code = code
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
        /// As in `UserRegistered` (nil in older events).
        public var alias: Int64?
        public var code: String?
        public var subject: String { userId.description }

        public init(userId: UserID, email: String, nickname: String, profileImage: String?, alias: Int64? = nil, code: String? = nil) {
            self.userId = userId
            self.email = email
            self.nickname = nickname
            self.profileImage = profileImage
            self.alias = alias
            self.code = code
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
    /// A device token (an APNs hex token or an FCM registration token) now belongs to the user:
    /// sent on the client's `PUT`/`POST /v1/users/deviceToken`, join or login with a token the
    /// user did not have. A token belongs to one user at a time; when another account signs in on
    /// the device, the previous owner gets `DeviceTokensRemoved` for it. Events of two users sit
    /// in different partitions, so a consumer keeps, per token, the owner with the latest `addedAt`.
    public struct DeviceTokenAdded: EventPayload {
        public static let eventType = "auth.user.device-token-added"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var token: String
        public var addedAt: Date
        public var subject: String { userId.description }

        public init(userId: UserID, token: String, addedAt: Date) {
            self.userId = userId
            self.token = token
            self.addedAt = Timestamp.truncated(addedAt)
        }
    }

    /// Device tokens no longer belong to the user: all of them on logout, one when another
    /// account signed in on that device, the least recently registered past auth's per-user cap. Nothing may be pushed to them for this user any more.
    public struct DeviceTokensRemoved: EventPayload {
        public static let eventType = "auth.user.device-tokens-removed"
        public static let topic = Topic.authUser
        public var userId: UserID
        public var tokens: [String]
        public var removedAt: Date
        public var subject: String { userId.description }

        public init(userId: UserID, tokens: [String], removedAt: Date) {
            self.userId = userId
            self.tokens = tokens
            self.removedAt = Timestamp.truncated(removedAt)
        }
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
        public var friendshipId: FriendshipID
        public var state: State
        public var subject: String { userId.description }

        public init(userId: UserID, friendId: UserID, friendshipId: FriendshipID, state: State) {
            self.userId = userId
            self.friendId = friendId
            self.friendshipId = friendshipId
            self.state = state
        }
    }
}
