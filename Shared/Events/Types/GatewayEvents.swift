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
