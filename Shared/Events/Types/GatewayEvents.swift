import Foundation

/// `gateway.session.v1` (compacted, keyed by session id): client sessions at gateways.
public enum GatewayEvents {
    public enum ClientProtocol: String, Codable, Sendable {
        case socketIO = "socket.io"
        case native
        case stomp
    }

    public struct SessionOpened: EventPayload {
        public static let eventType = "gateway.session.opened"
        public static let topic = Topic.gatewaySession
        public var sessionId: String
        public var gatewayId: String
        public var userId: UserID?
        public var clientProtocol: ClientProtocol
        public var openedAt: Date
        /// The gateway process that holds the session (`GatewayAlive.instanceId`): a session of
        /// an earlier instance of the same gateway id died with it. Absent from older gateways.
        public var gatewayInstance: String?
        /// The client's name for its device, when it gave one (native `identify`'s `device`).
        public var device: String?
        public var subject: String { sessionId }

        public init(
            sessionId: String, gatewayId: String, userId: UserID?, clientProtocol: ClientProtocol, openedAt: Date, gatewayInstance: String? = nil,
            device: String? = nil
        ) {
            self.device = device
            self.sessionId = sessionId
            self.gatewayId = gatewayId
            self.userId = userId
            self.clientProtocol = clientProtocol
            self.openedAt = Timestamp.truncated(openedAt)
            self.gatewayInstance = gatewayInstance
        }
    }

    public struct SessionClosed: EventPayload {
        public static let eventType = "gateway.session.closed"
        public static let topic = Topic.gatewaySession
        public var sessionId: String
        public var gatewayId: String
        public var userId: UserID?
        public var closedAt: Date
        public var subject: String { sessionId }

        public init(sessionId: String, gatewayId: String, userId: UserID?, closedAt: Date) {
            self.sessionId = sessionId
            self.gatewayId = gatewayId
            self.userId = userId
            self.closedAt = Timestamp.truncated(closedAt)
        }
    }
}

extension GatewayEvents {
    /// A gateway process is up (`gateway.session.v1`, keyed by `gateway/<gateway id>`),
    /// published every `intervalMilliseconds`: presence expires the sessions of a gateway whose
    /// announcements stop (a crash publishes no `SessionClosed`), and those of an earlier
    /// instance of the same gateway id as soon as a new instance announces itself.
    public struct GatewayAlive: EventPayload {
        public static let eventType = "gateway.alive"
        public static let topic = Topic.gatewaySession
        public var gatewayId: String
        /// This process's run of the gateway (unique per start).
        public var instanceId: String
        public var startedAt: Date
        public var at: Date
        public var intervalMilliseconds: Int
        public var subject: String { Self.key(gatewayId) }

        public init(gatewayId: String, instanceId: String, startedAt: Date, at: Date, intervalMilliseconds: Int) {
            self.gatewayId = gatewayId
            self.instanceId = instanceId
            self.startedAt = Timestamp.truncated(startedAt)
            self.at = Timestamp.truncated(at)
            self.intervalMilliseconds = intervalMilliseconds
        }

        /// The Kafka key of a gateway's announcements (a slash never occurs in a session id).
        public static func key(_ gatewayId: String) -> String { "gateway/\(gatewayId)" }
        /// The gateway id of an announcement key (its tombstone carries no value).
        public static func gatewayId(ofKey key: String) -> String? {
            key.hasPrefix("gateway/") ? String(key.dropFirst("gateway/".count)) : nil
        }
    }

    /// A gateway instance stopped gracefully, after closing or checkpointing its sessions
    /// (published once, then its key is deleted).
    public struct GatewayStopped: EventPayload {
        public static let eventType = "gateway.stopped"
        public static let topic = Topic.gatewaySession
        public var gatewayId: String
        public var instanceId: String
        public var at: Date
        public var subject: String { GatewayAlive.key(gatewayId) }

        public init(gatewayId: String, instanceId: String, at: Date) {
            self.gatewayId = gatewayId
            self.instanceId = instanceId
            self.at = Timestamp.truncated(at)
        }
    }
}

extension GatewayEvents {
    /// `gateway.interest.v1` (compacted, keyed by `<gateway id>/<conversation id>`): whether a
    /// gateway has at least one local subscriber for a conversation (a channel or a DM room). A
    /// gateway announces `interested: true` when its first local subscriber arrives and `false`
    /// when the last one leaves; `chat-fanout` reads the topic whole and keeps the latest state
    /// per key.
    public struct InterestChanged: EventPayload {
        public static let eventType = "gateway.interest.changed"
        public static let topic = Topic.gatewayInterest
        public var gatewayId: String
        /// The channel id or DM room id.
        public var conversationId: UUID
        public var interested: Bool
        public var subject: String { "\(gatewayId)/\(conversationId.lowercased)" }

        public init(gatewayId: String, conversationId: UUID, interested: Bool) {
            self.gatewayId = gatewayId
            self.conversationId = conversationId
            self.interested = interested
        }

        enum CodingKeys: String, CodingKey { case gatewayId, conversationId, interested }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(gatewayId, forKey: .gatewayId)
            try c.encodeLowercased(conversationId, forKey: .conversationId)
            try c.encode(interested, forKey: .interested)
        }
    }

    /// `gateway.delivery.v1` carries no event type of its own: a delivery is the
    /// `chat.message.v1` CloudEvent unchanged, produced once per interested gateway with the
    /// gateway id as its Kafka key, into the partition `deliveryPartition(for:)` picks — so each
    /// gateway reads exactly one partition and keeps the records keyed by its id.
    public static func deliveryPartition(for gatewayId: String, partitions: Int = Topic.gatewayDelivery.partitions) -> Int32 {
        // FNV-1a (stable across processes and versions, unlike Swift's seeded `hashValue`).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in gatewayId.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return Int32(hash % UInt64(max(partitions, 1)))
    }
}
