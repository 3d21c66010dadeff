import Logging
import NIOCore
import NIOPosix

/// A connection to one Kafka broker, as a client, on a NIO event loop: requests go out in order
/// and each answer completes its request's future (a broker answers a connection's requests in
/// the order they came). Plaintext only: TLS and SASL connections are librdkafka's.
final class KafkaClientConnection: Sendable {
    let channel: any Channel
    let address: KafkaBrokerAddress

    private init(channel: any Channel, address: KafkaBrokerAddress) {
        self.channel = channel
        self.address = address
    }

    var eventLoop: any EventLoop { channel.eventLoop }

    /// Connects within `timeout`; the connection sends `clientId` with each request.
    static func connect(
        to address: KafkaBrokerAddress, clientId: String, on eventLoop: any EventLoop, timeout: TimeAmount
    ) async throws -> KafkaClientConnection {
        let channel = try await ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(KafkaFrameDecoder(minimumSize: 4)))
                    try channel.pipeline.syncOperations.addHandler(KafkaClientHandler(clientId: clientId))
                }
            }
            .connect(host: address.host, port: address.port)
            .get()
        return KafkaClientConnection(channel: channel, address: address)
    }

    /// Sends a request; the future holds the answer's body (after its correlation id), or fails
    /// when the connection closes first. A request unanswered after `timeout` closes the
    /// connection (a broker that went silent, not away, would hold it forever).
    func send(_ api: KafkaClientAPI, version: Int16, body: ByteBuffer, timeout: TimeAmount) -> EventLoopFuture<ByteBuffer> {
        let promise = channel.eventLoop.makePromise(of: ByteBuffer.self)
        let request = KafkaClientRequest(api: api.rawValue, version: version, body: body, deadline: .now() + timeout, answer: promise)
        // A write that never reached the handler (the channel closed) fails the request here;
        // one that did is failed by the handler when the channel closes (the second is ignored).
        channel.writeAndFlush(request).whenFailure { promise.fail($0) }
        return promise.futureResult
    }

    func request(_ api: KafkaClientAPI, version: Int16, body: ByteBuffer, timeout: TimeAmount = .seconds(10)) async throws -> ByteBuffer {
        try await send(api, version: version, body: body, timeout: timeout).get()
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// The requests this client makes, by Kafka API key.
enum KafkaClientAPI: Int16 {
    case produce = 0
    case fetch = 1
    case listOffsets = 2
    case metadata = 3
}

/// A broker's host and port, as the bootstrap list or a metadata answer gives them.
struct KafkaBrokerAddress: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int

    var description: String { "\(host):\(port)" }

    /// `bootstrap.servers`: comma-separated `host:port` entries (an optional `plaintext://` prefix
    /// is accepted; an IPv6 host in brackets); nil for an entry that is not one.
    static func parseList(_ servers: String) -> [KafkaBrokerAddress]? {
        let entries = servers.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { return nil }
        var result: [KafkaBrokerAddress] = []
        for var entry in entries {
            if let scheme = entry.firstRange(of: "://") { entry = String(entry[scheme.upperBound...]) }
            guard let colon = entry.lastIndex(of: ":"), let port = Int(entry[entry.index(after: colon)...]), (1...65_535).contains(port) else {
                return nil
            }
            var host = String(entry[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            result.append(KafkaBrokerAddress(host: host, port: port))
        }
        return result
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

extension ByteBuffer {
    /// A client's request frame: its size, request header v1 (API key, version, correlation id,
    /// client id), then `body`.
    mutating func writeKafkaRequest(api: Int16, version: Int16, correlationId: Int32, clientId: String, body: ByteBuffer) {
        let start = writerIndex
        writeKafka(Int32(0))  // the size, set below
        writeKafka(api)
        writeKafka(version)
        writeKafka(correlationId)
        writeKafkaString(clientId)
        var rest = body
        writeBuffer(&rest)
        setInteger(Int32(writerIndex - start - 4), at: start, endianness: .big)
    }
}

/// A request on its way to `KafkaClientHandler`.
struct KafkaClientRequest: Sendable {
    var api: Int16
    var version: Int16
    var body: ByteBuffer
    var deadline: NIODeadline
    var answer: EventLoopPromise<ByteBuffer>
}

/// The connection is gone; its requests without an answer fail with this.
struct KafkaConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the broker connection closed" }
}

/// A request went unanswered past its deadline; the connection is closed.
struct KafkaRequestTimedOut: Error, CustomStringConvertible {
    var description: String { "the broker did not answer in time" }
}

/// Frames requests (request header v1: key, version, correlation id, client id) and matches
/// answers to them in order. An answer out of order is a broken connection: it is closed, as
/// is one whose oldest request is past its deadline (checked once a second).
final class KafkaClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = KafkaClientRequest
    typealias OutboundOut = ByteBuffer

    private let clientId: String
    private var pending = CircularBuffer<(correlationId: Int32, deadline: NIODeadline, answer: EventLoopPromise<ByteBuffer>)>()
    private var nextCorrelationId: Int32 = 1
    private var deadlineCheck: RepeatedTask?

    init(clientId: String) {
        self.clientId = clientId
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadlineCheck = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let (handler, context) = loopBound.value
            guard let oldest = handler.pending.first, oldest.deadline < .now() else { return }
            handler.failAll(KafkaRequestTimedOut())
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        let correlationId = nextCorrelationId
        nextCorrelationId = nextCorrelationId == .max ? 1 : nextCorrelationId + 1
        var frame = context.channel.allocator.buffer(capacity: request.body.readableBytes + 16 + clientId.utf8.count)
        frame.writeKafkaRequest(api: request.api, version: request.version, correlationId: correlationId, clientId: clientId, body: request.body)
        pending.append((correlationId, request.deadline, request.answer))
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var frame = unwrapInboundIn(data)
        guard let correlationId = frame.readInteger(endianness: .big, as: Int32.self), let first = pending.first,
            first.correlationId == correlationId
        else {
            failAll(KafkaWireError("an answer the connection did not ask for"))
            context.close(promise: nil)
            return
        }
        pending.removeFirst()
        first.answer.succeed(frame)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(KafkaConnectionClosed())
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadlineCheck?.cancel()
        deadlineCheck = nil
        failAll(KafkaConnectionClosed())
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(error)
        context.close(promise: nil)
    }

    private func failAll(_ error: any Error) {
        while let request = pending.popFirst() { request.answer.fail(error) }
    }
}
