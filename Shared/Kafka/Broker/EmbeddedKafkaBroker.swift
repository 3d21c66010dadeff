import Logging
import NIOCore
import NIOPosix

/// A single-node Kafka broker in this process, on 127.0.0.1: the real Kafka protocol (the
/// subset librdkafka 2.0.2 uses: idempotent produce, fetch, offsets by time, consumer groups with
/// the classic protocol, committed offsets), records in memory. Built to replace librdkafka's mock
/// cluster as the dev and test broker: a fetch finds its offset by binary search (the mock walks
/// every batch of the partition from the oldest, for every fetch) and is answered as soon as a
/// record arrives (the mock holds an empty fetch for its whole wait), and a fetch returns every
/// batch that fits (the mock one per partition).
///
/// Not served: transactions, compaction, several brokers, TLS/SASL. Retention is by size per
/// partition, like the mock's.
public final class EmbeddedKafkaBroker: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let core: NIOLoopBound<BrokerCore>
    private let connections: NIOLoopBound<ConnectionRegistry>
    public let bootstrapServers: String

    /// - Parameters:
    ///   - retentionBytes: record bytes kept per partition before the oldest batches go.
    ///   - autoCreatePartitions: partitions of a topic a client's metadata request creates.
    public init(port: Int = 0, retentionBytes: Int = 5 << 20, autoCreatePartitions: Int = 4, logger: Logger) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let host = "127.0.0.1"
        let core = try loop.submit {
            NIOLoopBound(
                BrokerCore(host: host, retentionBytes: retentionBytes, autoCreatePartitions: autoCreatePartitions, eventLoop: loop, logger: logger),
                eventLoop: loop)
        }.wait()
        let connections = try loop.submit { NIOLoopBound(ConnectionRegistry(), eventLoop: loop) }.wait()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let registry = connections.value
                    guard !registry.down else {
                        channel.close(promise: nil)
                        return
                    }
                    let handler = BrokerConnectionHandler(core: core.value, registry: registry, logger: logger)
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(KafkaFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        guard let boundPort = channel.localAddress?.port else {
            try? group.syncShutdownGracefully()
            throw KafkaError.configuration("embedded broker has no port")
        }
        try loop.submit { core.value.port = boundPort }.wait()
        loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { _ in core.value.expireSessions() }
        self.group = group
        self.core = core
        self.connections = connections
        self.bootstrapServers = "\(host):\(boundPort)"
    }

    deinit {
        channel.close(promise: nil)
        // Not the blocking variant: the last reference may go on some event loop's thread.
        group.shutdownGracefully { _ in }
    }

    private var loop: any EventLoop { channel.eventLoop }

    /// Creates a topic; an existing one keeps its partitions. Not to be called on the broker's loop.
    public func createTopic(_ name: String, partitions: Int) throws {
        guard BrokerCore.isValidTopicName(name) else { throw KafkaError.configuration("invalid topic name \(name)") }
        let core = self.core
        try loop.submit { core.value.createTopic(name, partitions: partitions) }.wait()
    }

    /// Makes the next `count` Produce requests fail with the broker error `code` — with `topic`,
    /// only the next `count` requests' records for that topic (other topics are served).
    public func failNextProduceRequests(_ count: Int, code: Int16, topic: String? = nil) {
        let core = self.core
        try? loop.submit { core.value.produceErrors += Array(repeating: (code, topic), count: count) }.wait()
    }

    /// The largest record batch a Produce request may carry (`message.max.bytes`; Kafka's default
    /// 1 048 588 until set).
    public func setMaxBatchBytes(_ bytes: Int) {
        let core = self.core
        try? loop.submit { core.value.maxBatchBytes = bytes }.wait()
    }

    /// Injected Produce faults not yet used.
    public var pendingProduceFaults: Int {
        let core = self.core
        return (try? loop.submit { core.value.produceErrors.count }.wait()) ?? 0
    }

    /// Closes every connection and refuses new ones (an outage), or serves again.
    public func setDown(_ down: Bool) {
        let connections = self.connections
        try? loop.submit {
            connections.value.down = down
            if down { connections.value.closeAll() }
        }.wait()
    }
}

/// The open connections, so that an outage can close them.
final class ConnectionRegistry {
    var down = false
    var open: [ObjectIdentifier: BrokerConnectionHandler] = [:]

    func closeAll() {
        for handler in open.values { handler.close() }
    }
}

/// Splits the stream into Kafka frames (an int32 size, then a request or an answer).
struct KafkaFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    /// librdkafka sends at most `message.max.bytes` (1 MB by default) per request; a fetch
    /// answer holds at most its request's `max_bytes`.
    static let maxFrame = 100 << 20
    /// A request's header alone is 8 bytes; an answer's correlation id is 4.
    var minimumSize: Int32 = 8

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let size = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: Int32.self) else { return .needMoreData }
        guard size >= minimumSize, Int(size) <= Self.maxFrame else { throw KafkaWireError("frame size \(size)") }
        guard buffer.readableBytes >= 4 + Int(size) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let frame = buffer.readSlice(length: Int(size)) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }
}

/// One client connection: requests are handled one at a time and answered in order, as Kafka
/// brokers do; a request answered later (a waiting fetch or join) holds the ones behind it.
final class BrokerConnectionHandler: ChannelInboundHandler, BrokerConnection {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let core: BrokerCore
    private let registry: ConnectionRegistry
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var queue = CircularBuffer<ByteBuffer>()
    private var waitingFor: Int32?
    /// The request `core.handle` is working on, and its answer if it came before `handle` returned.
    private var handling: Int32?
    private var answeredWhileHandling: ByteBuffer?
    private(set) var isClosed = false

    init(core: BrokerCore, registry: ConnectionRegistry, logger: Logger) {
        self.core = core
        self.registry = registry
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        registry.open[ObjectIdentifier(self)] = self
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        markClosed()
    }

    func channelInactive(context: ChannelHandlerContext) {
        markClosed()
        context.fireChannelInactive()
    }

    private func markClosed() {
        isClosed = true
        context = nil
        queue.removeAll()
        registry.open[ObjectIdentifier(self)] = nil
    }

    func close() {
        context?.close(promise: nil)
    }

    /// Requests a client may have queued behind one that waits (librdkafka keeps at most
    /// `max.in.flight` per connection, 5 in the suite's producers): more closes the connection.
    static let maxQueuedRequests = 1_000

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard queue.count < Self.maxQueuedRequests else {
            logger.warning("embedded broker closes a connection: too many requests queued", metadata: ["queued": "\(queue.count)"])
            context.close(promise: nil)
            markClosed()
            return
        }
        queue.append(unwrapInboundIn(data))
        drain()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A client going away resets its connection: routine. Bytes that are not Kafka are not.
        if error is IOError {
            logger.debug("embedded broker connection error", metadata: ["error": "\(error)"])
        } else {
            logger.warning("embedded broker closes a connection", metadata: ["error": "\(error)"])
        }
        context.close(promise: nil)
    }

    private func drain() {
        while waitingFor == nil, !isClosed, let frame = queue.popFirst() {
            process(frame)
        }
        context?.flush()
    }

    private func process(_ frame: ByteBuffer) {
        var reader = KafkaReader(frame)
        do {
            let key = try reader.int16()
            let version = try reader.int16()
            let correlationId = try reader.int32()
            let clientId = try reader.nullableString()
            guard let api = BrokerAPI(rawValue: key) else { throw KafkaWireError("API key \(key) is not served") }
            if api == .apiVersions, version >= 3 { try reader.skipTaggedFields() }
            let header = RequestHeader(api: api, version: version, correlationId: correlationId, clientId: clientId)
            logger.trace("embedded broker request", metadata: ["api": "\(api)", "version": "\(version)", "client": "\(clientId ?? "")"])
            handling = correlationId
            answeredWhileHandling = nil
            let reply = try core.handle(header, &reader, connection: self)
            handling = nil
            switch reply {
            case .now(let body): write(correlationId: correlationId, body: body)
            case .later:
                // A join can complete the group (and answer itself) before `handle` returns.
                if let body = answeredWhileHandling { write(correlationId: correlationId, body: body) } else { waitingFor = correlationId }
            case .none: break
            }
            answeredWhileHandling = nil
        } catch {
            handling = nil
            logger.warning("embedded broker refuses a request", metadata: ["error": "\(error)"])
            context?.close(promise: nil)
            markClosed()
        }
    }

    private func write(correlationId: Int32, body: ByteBuffer) {
        guard let context else { return }
        // An answer past an int32 frame size (possible only once clients made the broker hold
        // gigabytes, a join leader's members' metadata say) closes the connection, not the broker.
        guard body.readableBytes <= Int(Int32.max) - 4 else {
            logger.warning("embedded broker closes a connection: an answer too large for a frame", metadata: ["bytes": "\(body.readableBytes)"])
            context.close(promise: nil)
            markClosed()
            return
        }
        var frame = context.channel.allocator.buffer(capacity: body.readableBytes + 8)
        frame.writeKafka(Int32(body.readableBytes + 4))
        frame.writeKafka(correlationId)
        var body = body
        frame.writeBuffer(&body)
        context.write(wrapOutboundOut(frame), promise: nil)
    }

    func complete(correlationId: Int32, body: ByteBuffer) {
        if handling == correlationId {
            answeredWhileHandling = body
            return
        }
        guard !isClosed, waitingFor == correlationId, let context else { return }
        waitingFor = nil
        write(correlationId: correlationId, body: body)
        context.flush()
        // The requests queued behind it run on a later turn of the loop, not inside whatever
        // answered this one (a join completing a group answers every member's connection).
        context.eventLoop.assumeIsolated().execute { self.drain() }
    }
}
