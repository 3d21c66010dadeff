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
        public var subject: String { sessionId }

        public init(sessionId: String, gatewayId: String, userId: UserID?, clientProtocol: ClientProtocol, openedAt: Date) {
            self.sessionId = sessionId
            self.gatewayId = gatewayId
            self.userId = userId
            self.clientProtocol = clientProtocol
            self.openedAt = Timestamp.truncated(openedAt)
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
        public var subject: String { "\(gatewayId)/\(conversationId.uuidString.lowercased())" }

        public init(gatewayId: String, conversationId: UUID, interested: Bool) {
            self.gatewayId = gatewayId
            self.conversationId = conversationId
            self.interested = interested
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
