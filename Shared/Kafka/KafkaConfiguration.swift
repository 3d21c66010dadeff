/// librdkafka properties shared by every client kind, plus typed accessors for the ones the
/// suite sets. Any librdkafka property can be set through `properties`.
public struct KafkaClientConfiguration: Sendable {
    /// Comma-separated `host:port` list.
    public var bootstrapServers: String
    public var clientId: String
    /// TLS / SASL towards the brokers (plaintext unless set).
    public var security: KafkaSecurity = .plaintext
    /// Any further librdkafka property (see librdkafka's CONFIGURATION.md); applied last.
    public var properties: [String: String] = [:]
    /// Where consumers made from this configuration register for readiness (nil: nowhere).
    public var readiness: KafkaReadiness?

    public init(bootstrapServers: String, clientId: String = "chatsuite") {
        self.bootstrapServers = bootstrapServers
        self.clientId = clientId
    }

    /// Holds `sasl.password` when SASL is on: never log these.
    var baseProperties: [String: String] {
        var p = [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientId,
            // Surface "all brokers down" and resolve failures quickly instead of silently retrying.
            "socket.connection.setup.timeout.ms": "10000",
            "reconnect.backoff.ms": "50",
            "reconnect.backoff.max.ms": "1000",
            "log.connection.close": "false",
        ]
        for (k, v) in security.properties { p[k] = v }
        return p
    }
}

public struct KafkaProducerConfiguration: Sendable {
    public var client: KafkaClientConfiguration
    /// How long the producer waits to fill a batch. The default (0) favours latency: librdkafka's
    /// broker thread waits in whole milliseconds, so 0.5 held a lone record about 1.1 ms
    /// (docs/benchmarks.md, part 50); raise it (5–20 ms) to trade latency for throughput.
    public var lingerMilliseconds: Double = 0
    /// How long a record may stay undelivered (including retries while brokers are down)
    /// before its delivery report fails with a retriable error.
    public var messageTimeoutMilliseconds: Int = 30_000
    /// Upper bound of records buffered in the client before `send` waits.
    public var maxBufferedMessages: Int = 1_000_000
    /// One of `compressionCodecs`.
    public var compression: String = "lz4"
    /// The codecs `compression` may name (librdkafka's `compression.codec` values).
    public static let compressionCodecs = ["lz4", "zstd", "snappy", "gzip", "none"]
    public var properties: [String: String] = [:]

    public init(client: KafkaClientConfiguration) {
        self.client = client
    }

    var librdkafkaProperties: [String: String] {
        var p = client.baseProperties
        p["enable.idempotence"] = "true"
        p["acks"] = "all"
        p["max.in.flight.requests.per.connection"] = "5"
        p["linger.ms"] = String(lingerMilliseconds)
        p["message.timeout.ms"] = String(messageTimeoutMilliseconds)
        p["queue.buffering.max.messages"] = String(maxBufferedMessages)
        p["compression.codec"] = compression
        p["partitioner"] = "murmur2_random"  // Java-client compatible: same key → same partition
        for (k, v) in client.properties { p[k] = v }
        for (k, v) in properties { p[k] = v }
        return p
    }
}

public struct KafkaConsumerConfiguration: Sendable {
    public enum Mode: Sendable, Equatable {
        /// Join a consumer group and subscribe to topics; partitions are balanced among members.
        case group(id: String, topics: [String])
        /// Read fixed partitions (e.g. a whole compacted topic) without a group.
        case assignment([TopicPartitionOffset])
    }

    public enum OffsetReset: String, Sendable {
        case earliest, latest
    }

    public var client: KafkaClientConfiguration
    public var mode: Mode
    public var autoOffsetReset: OffsetReset = .earliest
    public var sessionTimeoutMilliseconds: Int = 10_000
    public var heartbeatIntervalMilliseconds: Int = 1_000
    /// Maximum time a fetch waits at the broker for data; lower favours latency on idle topics.
    public var fetchWaitMaxMilliseconds: Int = 100
    /// Under load, how long the next fetch asks the broker to hold it for more (up to
    /// `batchFetchMinBytes`): each fetch then carries what arrived meanwhile, at most this much
    /// later, instead of one fetch and one wake-up per record. Under load: the last answer brought
    /// records and was itself such a fetch or came within this wait. Otherwise fetches wait as
    /// `fetchWaitMaxMilliseconds` and `fetch.min.bytes` say, so an idle consumer polls no more
    /// often, records further apart cost no extra empty fetch each, and the first record after a
    /// quiet spell is answered at once. 0: off. Read by the suite's own fetchers (`KafkaPartitionReader`,
    /// `consumeFetchingOnPollThread`); librdkafka's consumer ignores it.
    public var fetchBatchWaitMilliseconds: Int = 0
    /// The `min_bytes` of a batching fetch (`fetchBatchWaitMilliseconds`): an answer that full
    /// goes out before the wait is over.
    public static let batchFetchMinBytes: Int32 = 64 << 10
    /// How often stored offsets are committed in the background (also committed on rebalance and close).
    public var autoCommitIntervalMilliseconds: Int = 500
    /// Hand `.endOfPartition` events to the application when the consumer reaches the end of a
    /// partition (librdkafka always reports them to the consumer, which tracks its catch-up).
    public var reportEndOfPartition: Bool = false
    /// Most messages handed out per poll batch.
    public var maxBatchSize: Int = 500
    /// After a poll's first message, how long to keep collecting (up to `maxBatchSize`) before
    /// the batch is handed out: larger batches for a consumer that applies a batch at once, for
    /// at most this much latency. 0: hand out what is already there.
    public var batchLingerMilliseconds: Int = 0
    /// How long `close()` may take (final commit, revoke, leaving the group) before the consumer
    /// is given up unclosed: a shutdown with the brokers unreachable still ends, within the
    /// services' 8 s graceful-shutdown limit.
    public var closeTimeout: Duration = .seconds(5)
    public var properties: [String: String] = [:]
    /// The `consumer` label of this consumer's lag gauge (`kafka_consumer_lag`): a bounded name
    /// such as the group id or a reader's role; nil means the group id, or the client id for an
    /// assignment reader.
    public var metricsName: String?

    public init(client: KafkaClientConfiguration, mode: Mode) {
        self.client = client
        self.mode = mode
    }

    /// The `consumer` label of the lag gauge.
    var lagLabel: String {
        if let metricsName { return metricsName }
        if case .group(let id, _) = mode { return id }
        return client.clientId
    }

    var librdkafkaProperties: [String: String] {
        var p = client.baseProperties
        switch mode {
        case .group(let id, _):
            p["group.id"] = id
        case .assignment:
            // librdkafka requires a group.id even for manual assignment when committing;
            // assignment readers never commit, so a fixed dummy is fine.
            p["group.id"] = "chatsuite-assignment-\(client.clientId)"
            p["enable.auto.commit"] = "false"
        }
        p["enable.auto.offset.store"] = "false"  // at-least-once: store after processing
        if p["enable.auto.commit"] == nil { p["enable.auto.commit"] = "true" }
        p["auto.commit.interval.ms"] = String(autoCommitIntervalMilliseconds)
        p["auto.offset.reset"] = autoOffsetReset.rawValue
        p["session.timeout.ms"] = String(sessionTimeoutMilliseconds)
        p["heartbeat.interval.ms"] = String(heartbeatIntervalMilliseconds)
        p["fetch.wait.max.ms"] = String(fetchWaitMaxMilliseconds)
        p["enable.partition.eof"] = "true"
        for (k, v) in client.properties { p[k] = v }
        for (k, v) in properties { p[k] = v }
        return p
    }
}

public struct TopicPartitionOffset: Sendable, Hashable {
    public enum Offset: Sendable, Hashable {
        case beginning
        case end
        case stored
        case exact(Int64)

        var rawValue: Int64 {
            switch self {
            case .beginning: return -2  // RD_KAFKA_OFFSET_BEGINNING
            case .end: return -1  // RD_KAFKA_OFFSET_END
            case .stored: return -1000  // RD_KAFKA_OFFSET_STORED
            case .exact(let o): return o
            }
        }
    }

    public var topic: String
    public var partition: Int32
    public var offset: Offset

    public init(topic: String, partition: Int32, offset: Offset = .beginning) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}
