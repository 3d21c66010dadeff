import Logging
import NIOCore

/// The API keys the broker serves, with the versions it advertises. Minimum versions are 0 so
/// that librdkafka's feature checks (which test version ranges for overlap) find every feature
/// it needs; a client always picks the highest version both sides know, and librdkafka 2.0.2
/// knows at least these maxima, so each handler reads the versions from here down to the first
/// one with the same layout.
enum BrokerAPI: Int16, CaseIterable {
    case produce = 0
    case fetch = 1
    case listOffsets = 2
    case metadata = 3
    case offsetCommit = 8
    case offsetFetch = 9
    case findCoordinator = 10
    case joinGroup = 11
    case heartbeat = 12
    case leaveGroup = 13
    case syncGroup = 14
    case apiVersions = 18
    case initProducerId = 22

    var versions: ClosedRange<Int16> {
        switch self {
        case .produce: return 0...5
        case .fetch: return 0...5
        case .listOffsets: return 0...2
        case .metadata: return 0...4
        case .offsetCommit: return 0...3
        case .offsetFetch: return 0...3
        case .findCoordinator: return 0...1
        case .joinGroup: return 0...2
        case .heartbeat: return 0...1
        case .leaveGroup: return 0...1
        case .syncGroup: return 0...1
        case .apiVersions: return 0...3
        case .initProducerId: return 0...1
        }
    }

    /// The oldest version each handler reads: older ones predate the record batch format
    /// (magic 2) or group membership as librdkafka 2.0.2 uses it.
    var oldestServed: Int16 {
        switch self {
        case .produce: return 3
        case .fetch: return 4
        case .listOffsets, .offsetFetch: return 1
        case .offsetCommit: return 2
        default: return 0
        }
    }
}

struct RequestHeader {
    var api: BrokerAPI
    var version: Int16
    var correlationId: Int32
    var clientId: String?
}

struct TopicPartitionKey: Hashable {
    var topic: String
    var partition: Int32
}

/// What a request gets: a response now, one later (through the connection), or none (a
/// Produce with acks=0).
enum BrokerReply {
    case now(ByteBuffer)
    case later
    case none
}

/// A connection as the broker's core sees it: it can be answered later (a fetch waiting for
/// data, a join waiting for the group), strictly in request order.
protocol BrokerConnection: AnyObject {
    var isClosed: Bool { get }
    func complete(correlationId: Int32, body: ByteBuffer)
}

/// One partition: its log, the fetches waiting for it, the idempotent producers' sequences.
final class BrokerPartition {
    var log: PartitionLog
    var waiters: [ObjectIdentifier: FetchWait] = [:]
    var producers: [Int64: ProducerSequence] = [:]

    init(retentionBytes: Int) { log = PartitionLog(retentionBytes: retentionBytes) }
}

/// The last batches of one idempotent producer on one partition: a retried batch gets its first
/// offset again instead of being appended twice.
struct ProducerSequence {
    var epoch: Int16
    var lastSequence: Int32
    var recent: [(firstSequence: Int32, lastSequence: Int32, baseOffset: Int64)]
}

/// The broker's state, touched only on its one event loop (so no locks): topics, groups,
/// waiting fetches. librdkafka's mock keeps the same state, but finds a fetch's offset by
/// walking the partition's batches from the oldest and holds an empty fetch for its whole wait.
final class BrokerCore {
    let nodeId: Int32 = 1
    let host: String
    var port: Int = 0
    let retentionBytes: Int
    let eventLoop: any EventLoop
    let logger: Logger
    var topics: [String: [BrokerPartition]] = [:]
    var groups: [String: ConsumerGroup] = [:]
    var nextProducerId: Int64 = 1000
    /// Errors to answer the next Produce requests with (fault injection): every topic of the
    /// request, or only a request's records for `topic`.
    var produceErrors: [(code: Int16, topic: String?)] = []
    /// The largest record batch a Produce request may carry (Kafka's `message.max.bytes`, whose
    /// default this is); a larger one is refused with MESSAGE_TOO_LARGE.
    var maxBatchBytes = 1_048_588
    /// The most record bytes a Fetch is answered with (Kafka's `fetch.max.bytes`, whose default
    /// this is), however many a request asks for.
    static let maxFetchBytes = 57_671_680
    /// The longest metadata an offset is committed with (Kafka's `offset.metadata.max.bytes`,
    /// whose default this is); a longer one is refused with OFFSET_METADATA_TOO_LARGE.
    static let maxOffsetMetadataBytes = 4_096
    /// Partitions of a topic created because a producer asked for it.
    let autoCreatePartitions: Int
    var allocator = ByteBufferAllocator()

    init(host: String, retentionBytes: Int, autoCreatePartitions: Int, eventLoop: any EventLoop, logger: Logger) {
        self.host = host
        self.retentionBytes = retentionBytes
        self.autoCreatePartitions = autoCreatePartitions
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Creates a topic; an existing one keeps its partitions.
    func createTopic(_ name: String, partitions: Int) {
        guard topics[name] == nil else { return }
        topics[name] = (0..<max(1, partitions)).map { _ in BrokerPartition(retentionBytes: retentionBytes) }
    }

    func partition(_ topic: String, _ index: Int32) -> BrokerPartition? {
        guard let partitions = topics[topic], index >= 0, Int(index) < partitions.count else { return nil }
        return partitions[Int(index)]
    }

    /// Answers a request now, later through `connection`, or not at all.
    func handle(_ header: RequestHeader, _ reader: inout KafkaReader, connection: any BrokerConnection) throws -> BrokerReply {
        guard header.api == .apiVersions || header.api.versions.contains(header.version), header.version >= header.api.oldestServed else {
            throw KafkaWireError("\(header.api) v\(header.version) is not served")
        }
        switch header.api {
        case .apiVersions: return .now(apiVersions(header))
        case .metadata: return .now(try metadata(header, &reader))
        case .findCoordinator: return .now(try findCoordinator(header, &reader))
        case .initProducerId: return .now(try initProducerId(header, &reader))
        case .produce: return try produce(header, &reader)
        case .fetch: return try fetch(header, &reader, connection: connection)
        case .listOffsets: return .now(try listOffsets(header, &reader))
        case .joinGroup: return try joinGroup(header, &reader, connection: connection)
        case .syncGroup: return try syncGroup(header, &reader, connection: connection)
        case .heartbeat: return .now(try heartbeat(header, &reader))
        case .leaveGroup: return .now(try leaveGroup(header, &reader))
        case .offsetCommit: return .now(try offsetCommit(header, &reader))
        case .offsetFetch: return .now(try offsetFetch(header, &reader))
        }
    }

    func newBody() -> ByteBuffer { allocator.buffer(capacity: 256) }

    // MARK: - ApiVersions, Metadata, FindCoordinator, InitProducerId

    private func apiVersions(_ header: RequestHeader) -> ByteBuffer {
        var out = newBody()
        let supported = BrokerAPI.apiVersions.versions.contains(header.version)
        // An unsupported ApiVersions version is answered in v0's layout (KIP-511).
        let flexible = supported && header.version >= 3
        out.writeKafka((supported ? KafkaErrorCode.none : .unsupportedVersion).rawValue)
        let apis = BrokerAPI.allCases
        if flexible { out.writeUnsignedVarint(UInt32(apis.count + 1)) } else { out.writeKafka(Int32(apis.count)) }
        for api in apis {
            out.writeKafka(api.rawValue)
            out.writeKafka(api.versions.lowerBound)
            out.writeKafka(api.versions.upperBound)
            if flexible { out.writeUnsignedVarint(0) }
        }
        if supported, header.version >= 1 { out.writeKafka(Int32(0)) }  // throttle time
        if flexible { out.writeUnsignedVarint(0) }
        return out
    }

    private func metadata(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let v = header.version
        let requested = try reader.array { try $0.string() }
        var allowAutoCreate = true
        if v >= 4 { allowAutoCreate = try reader.int8() != 0 }
        // v0: an empty list means every topic; v1+: null does.
        let names: [String]
        if let requested, !(v == 0 && requested.isEmpty) {
            // As Kafka, which reads the names into a set: a topic named twice is answered once (a
            // short name repeated would otherwise answer with many times the request's bytes).
            var seen = Set<String>()
            names = requested.filter { seen.insert($0).inserted }
            if allowAutoCreate {
                for name in names where topics[name] == nil && Self.isValidTopicName(name) { createTopic(name, partitions: autoCreatePartitions) }
            }
        } else {
            names = topics.keys.sorted()
        }
        var out = newBody()
        if v >= 3 { out.writeKafka(Int32(0)) }
        out.writeKafka(Int32(1))  // brokers
        out.writeKafka(nodeId)
        out.writeKafkaString(host)
        out.writeKafka(Int32(port))
        if v >= 1 { out.writeKafkaString(nil) }  // rack
        if v >= 2 { out.writeKafkaString("chatsuite-embedded") }
        if v >= 1 { out.writeKafka(nodeId) }  // controller
        out.writeKafkaArray(names) { out, name in
            let partitions = self.topics[name]
            out.writeKafka((partitions == nil ? KafkaErrorCode.unknownTopicOrPartition : .none).rawValue)
            out.writeKafkaString(name)
            if v >= 1 { out.writeKafka(false) }  // is internal
            out.writeKafkaArray(0..<(partitions?.count ?? 0)) { out, index in
                out.writeKafka(KafkaErrorCode.none.rawValue)
                out.writeKafka(Int32(index))
                out.writeKafka(self.nodeId)  // leader
                out.writeKafka(Int32(1))  // replicas
                out.writeKafka(self.nodeId)
                out.writeKafka(Int32(1))  // in-sync replicas
                out.writeKafka(self.nodeId)
            }
        }
        return out
    }

    static func isValidTopicName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 249 && name != "." && name != ".."
            && name.utf8.allSatisfy {
                $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122)
            }
    }

    private func findCoordinator(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        _ = try reader.string()  // the group (or transactional id): this one broker coordinates all
        var out = newBody()
        if header.version >= 1 { out.writeKafka(Int32(0)) }
        out.writeKafka(KafkaErrorCode.none.rawValue)
        if header.version >= 1 { out.writeKafkaString(nil) }
        out.writeKafka(nodeId)
        out.writeKafkaString(host)
        out.writeKafka(Int32(port))
        return out
    }

    private func initProducerId(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let transactionalId = try reader.nullableString()
        _ = try reader.int32()
        var out = newBody()
        out.writeKafka(Int32(0))
        if transactionalId != nil {
            // Transactions are not served (the suite's producers are idempotent, not transactional).
            out.writeKafka(KafkaErrorCode.invalidRequest.rawValue)
            out.writeKafka(Int64(-1))
            out.writeKafka(Int16(-1))
        } else {
            out.writeKafka(KafkaErrorCode.none.rawValue)
            out.writeKafka(nextProducerId)
            out.writeKafka(Int16(0))
            nextProducerId += 1
        }
        return out
    }
}
