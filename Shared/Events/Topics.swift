/// A Kafka topic of the catalog. The name, partition count and cleanup policy are defined here
/// once; producers, consumers, the admin bootstrap and the embedded broker all read them from here.
public struct Topic: Sendable, Hashable, CustomStringConvertible {
    public enum CleanupPolicy: String, Sendable, Hashable {
        case delete
        case compact
    }

    public let name: String
    public let partitions: Int
    public let cleanupPolicy: CleanupPolicy
    /// What the Kafka key of every record is (documentation for producers and analytics users).
    public let key: String

    public init(name: String, partitions: Int, cleanupPolicy: CleanupPolicy = .delete, key: String) {
        self.name = name
        self.partitions = partitions
        self.cleanupPolicy = cleanupPolicy
        self.key = key
    }

    public var description: String { name }
}

extension Topic {
    /// Account lifecycle and profile changes; produced by `auth`.
    public static let authUser = Topic(name: "auth.user.v1", partitions: 6, key: "user id")
    /// Workspace, channel and membership lifecycle; produced by `workspace`.
    public static let workspace = Topic(name: "workspace.v1", partitions: 6, key: "workspace id")
    /// Channel and DM messages; produced by `chat`.
    public static let chatMessage = Topic(name: "chat.message.v1", partitions: 12, key: "channel id or DM room id")
    /// Read cursors; produced by `chat`.
    public static let chatRead = Topic(name: "chat.read.v1", partitions: 6, key: "user id")
    /// Client sessions opening and closing at gateways, and each gateway process's liveness;
    /// compacted (latest state per session and per gateway).
    public static let gatewaySession = Topic(
        name: "gateway.session.v1", partitions: 6, cleanupPolicy: .compact, key: "session id, or gateway/<gateway id> for liveness")
    /// Which gateway has local subscribers for which conversation or workspace; compacted, read
    /// whole by `chat-fanout`.
    public static let gatewayInterest = Topic(
        name: "gateway.interest.v1", partitions: 6, cleanupPolicy: .compact, key: "gateway id + conversation or workspace id")
    /// One record per (message, interested gateway); each gateway reads only its own.
    public static let gatewayDelivery = Topic(name: "gateway.delivery.v1", partitions: 12, key: "gateway id")
    /// Typing indicators from native gateway sessions; read by `chat-fanout` like messages.
    public static let gatewayTyping = Topic(name: "gateway.typing.v1", partitions: 12, key: "channel id or DM room id")
    /// Online/offline state per user; produced by `presence`.
    public static let presence = Topic(name: "presence.v1", partitions: 6, cleanupPolicy: .compact, key: "user id")
    /// Coin ledger outcomes (credited, debited, debit rejected); produced by `payment`.
    public static let payment = Topic(name: "payment.v1", partitions: 6, key: "user id")
    /// The study-matching app's queue and chat; produced by `study`.
    public static let study = Topic(name: "study.v1", partitions: 6, key: "uid of the user the event is for")

    /// Every topic of the suite, in the order an operator would read them.
    public static let catalog: [Topic] = [
        .authUser, .workspace, .chatMessage, .chatRead,
        .gatewaySession, .gatewayInterest, .gatewayTyping, .gatewayDelivery, .presence, .payment, .study,
    ]

    public static func named(_ name: String) -> Topic? {
        catalog.first { $0.name == name }
    }
}
