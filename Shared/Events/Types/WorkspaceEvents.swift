import Foundation

/// `workspace.v1`, keyed by workspace id: everything about workspaces, channels and membership
/// another service needs (chat keeps its membership read model from these). Every event carries
/// the state after the change, so a consumer never needs an earlier event to apply a later one.
public enum WorkspaceEvents {
    public struct WorkspaceCreated: EventPayload {
        public static let eventType = "workspace.created"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var name: String
        public var description: String?
        public var coverImage: String?
        public var ownerId: UserID
        public var defaultChannelId: ChannelID
        public var createdAt: Date
        /// Integer aliases of the workspace and its default channel for legacy clients
        /// (`Database.IntegerAlias`); nil in events written before aliases existed.
        public var alias: Int64?
        public var defaultChannelAlias: Int64?
        public var subject: String { workspaceId.description }

        public init(
            workspaceId: WorkspaceID, name: String, description: String?, coverImage: String?, ownerId: UserID,
            defaultChannelId: ChannelID, createdAt: Date, alias: Int64? = nil, defaultChannelAlias: Int64? = nil
        ) {
            self.alias = alias
            self.defaultChannelAlias = defaultChannelAlias
            self.workspaceId = workspaceId
            self.name = name
            self.description = description
            self.coverImage = coverImage
            self.ownerId = ownerId
            self.defaultChannelId = defaultChannelId
            self.createdAt = Timestamp.truncated(createdAt)
        }
    }

    /// Name, description or cover changed (the values after the change).
    public struct WorkspaceUpdated: EventPayload {
        public static let eventType = "workspace.updated"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var name: String
        public var description: String?
        public var coverImage: String?
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, name: String, description: String?, coverImage: String?) {
            self.workspaceId = workspaceId
            self.name = name
            self.description = description
            self.coverImage = coverImage
        }
    }

    /// The workspace and all its channels are gone (listed so consumers can drop them).
    public struct WorkspaceDeleted: EventPayload {
        public static let eventType = "workspace.deleted"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelIds: [ChannelID]
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelIds: [ChannelID]) {
            self.workspaceId = workspaceId
            self.channelIds = channelIds
        }
    }

    public struct WorkspaceOwnerChanged: EventPayload {
        public static let eventType = "workspace.owner-changed"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var previousOwnerId: UserID
        public var ownerId: UserID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, previousOwnerId: UserID, ownerId: UserID) {
            self.workspaceId = workspaceId
            self.previousOwnerId = previousOwnerId
            self.ownerId = ownerId
        }
    }

    /// A user became a member of the workspace (and of the channels listed, at least the default one).
    public struct MemberJoined: EventPayload {
        public enum Via: String, Codable, Sendable {
            case creation, invitation, inviteCode = "invite-code"
        }
        public static let eventType = "workspace.member-joined"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var userId: UserID
        public var channelIds: [ChannelID]
        public var via: Via
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, userId: UserID, channelIds: [ChannelID], via: Via) {
            self.workspaceId = workspaceId
            self.userId = userId
            self.channelIds = channelIds
            self.via = via
        }
    }

    /// A user left the workspace and, with it, the channels listed.
    public struct MemberLeft: EventPayload {
        public static let eventType = "workspace.member-left"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var userId: UserID
        public var channelIds: [ChannelID]
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, userId: UserID, channelIds: [ChannelID]) {
            self.workspaceId = workspaceId
            self.userId = userId
            self.channelIds = channelIds
        }
    }

    public struct ChannelCreated: EventPayload {
        public static let eventType = "workspace.channel-created"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var name: String
        public var description: String?
        public var ownerId: UserID
        public var isDefault: Bool
        public var createdAt: Date
        /// The channel's integer alias for legacy clients; nil in events written before aliases existed.
        public var alias: Int64?
        /// A thread's channel; nil for a channel.
        public var parentId: ChannelID?
        /// Whether a member of the workspace who is not in the channel joins it by reading it
        /// (`chat.channel-join-requested`): every channel of a `/v1` workspace; no channel of a
        /// Smooth community (its clients join otherwise). nil in events written before this
        /// field: not joinable.
        public var joinable: Bool?
        public var subject: String { workspaceId.description }

        public init(
            workspaceId: WorkspaceID, channelId: ChannelID, name: String, description: String?, ownerId: UserID,
            isDefault: Bool, createdAt: Date, alias: Int64? = nil, parentId: ChannelID? = nil, joinable: Bool? = nil
        ) {
            self.alias = alias
            self.parentId = parentId
            self.joinable = joinable
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.name = name
            self.description = description
            self.ownerId = ownerId
            self.isDefault = isDefault
            self.createdAt = Timestamp.truncated(createdAt)
        }
    }

    public struct ChannelUpdated: EventPayload {
        public static let eventType = "workspace.channel-updated"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var name: String
        public var description: String?
        public var coverImage: String?
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID, name: String, description: String?, coverImage: String?) {
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.name = name
            self.description = description
            self.coverImage = coverImage
        }
    }

    public struct ChannelDeleted: EventPayload {
        public static let eventType = "workspace.channel-deleted"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID) {
            self.workspaceId = workspaceId
            self.channelId = channelId
        }
    }

    public struct ChannelOwnerChanged: EventPayload {
        public static let eventType = "workspace.channel-owner-changed"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var previousOwnerId: UserID
        public var ownerId: UserID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID, previousOwnerId: UserID, ownerId: UserID) {
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.previousOwnerId = previousOwnerId
            self.ownerId = ownerId
        }
    }

    public struct ChannelMemberJoined: EventPayload {
        public static let eventType = "workspace.channel-member-joined"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var userId: UserID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID, userId: UserID) {
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.userId = userId
        }
    }

    /// A `chat.channel-join-requested` that the workspace turned down: the user is no longer in
    /// the workspace, or the channel is gone. Chat drops the membership it granted on the read
    /// (an accepted request is a `workspace.channel-member-joined`, or nothing when already in).
    public struct ChannelJoinRefused: EventPayload {
        public static let eventType = "workspace.channel-join-refused"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var userId: UserID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID, userId: UserID) {
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.userId = userId
        }
    }

    public struct ChannelMemberLeft: EventPayload {
        public static let eventType = "workspace.channel-member-left"
        public static let topic = Topic.workspace
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var userId: UserID
        public var subject: String { workspaceId.description }

        public init(workspaceId: WorkspaceID, channelId: ChannelID, userId: UserID) {
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.userId = userId
        }
    }
}

extension WorkspaceEvents {
    /// The workspace side of the coin saga: `payment` debits `amount` coins from `userId` and
    /// answers on `payment.v1` with `CoinsDebited` or `CoinDebitRejected` carrying `requestId`.
    public struct CoinDebitRequested: EventPayload {
        public static let eventType = "workspace.coin-debit-requested"
        public static let topic = Topic.workspace
        public var requestId: CoinRequestID
        public var workspaceId: WorkspaceID
        public var userId: UserID
        public var amount: Int
        public var reason: String
        public var subject: String { workspaceId.description }

        public init(requestId: CoinRequestID, workspaceId: WorkspaceID, userId: UserID, amount: Int, reason: String) {
            self.requestId = requestId
            self.workspaceId = workspaceId
            self.userId = userId
            self.amount = amount
            self.reason = reason
        }
    }

    /// A debit arrived for a creation that no longer exists (no pending or active workspace
    /// holds `requestId`): `payment` gives the coins of that debit back, once per `requestId`,
    /// and answers with `PaymentEvents.CoinsRefunded`.
    public struct CoinRefundRequested: EventPayload {
        public static let eventType = "workspace.coin-refund-requested"
        public static let topic = Topic.workspace
        public var requestId: CoinRequestID
        public var workspaceId: WorkspaceID
        public var userId: UserID
        public var subject: String { workspaceId.description }

        public init(requestId: CoinRequestID, workspaceId: WorkspaceID, userId: UserID) {
            self.requestId = requestId
            self.workspaceId = workspaceId
            self.userId = userId
        }
    }
}
