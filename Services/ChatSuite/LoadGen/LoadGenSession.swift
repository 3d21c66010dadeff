import Foundation
import HummingbirdWSClient
import NIOCore
import NIOWebSocket

/// One socket's protocol, run on its connection's event loop (`LoadGenFrameHandler`): the frames
/// it sends when the WebSocket opens, what it makes of each whole message it receives (handshake
/// steps, pings, measured deliveries), and when it is ready. Not thread-safe: only its handler
/// calls it, on that loop. Each protocol's steps are in its own file (LoadGenSocketIO, …).
///
/// Before, each socket was a task reading an async frame stream: every received frame resumed
/// it on the task pool, a hop between threads per frame that cost the generator more CPU than
/// the gateway it measured (docs/benchmarks.md, part 8).
final class LoadGenConversation {
    /// What the handler does for the conversation.
    enum Action: Equatable {
        /// Send a text frame.
        case send(String)
        /// Send `heartbeatFrame()` every `milliseconds`, the first after a random part of it.
        case heartbeat(every: Int)
    }

    let spec: LoadGenSocketSpec
    let markers: DeliveryMarkers
    let log: DeliveryLog
    let handshake: HandshakeState

    /// Socket.IO: namespaces connected, not yet acknowledged. STOMP: receipts awaited.
    var pending = Set<String>()
    /// Where the handshake stands (each protocol's own meaning: 0 = the first step).
    var stage = 0
    /// Native: the last dispatch's `s`.
    var lastSequence: Int?

    init(spec: LoadGenSocketSpec, markers: DeliveryMarkers, log: DeliveryLog, handshake: HandshakeState) {
        self.spec = spec
        self.markers = markers
        self.log = log
        self.handshake = handshake
    }

    /// The WebSocket is open.
    func opened() throws -> [Action] {
        switch spec.kind {
        case .socketio, .socketioUpgrade: return socketIOOpened()
        case .native: return []
        case .stomp: return stompOpened()
        case .nchan:
            ready()
            return []
        }
    }

    /// A whole text message, received at `nanos`; throws `LoadGenProtocolError` when the socket
    /// must end.
    func received(_ message: ByteBuffer, at nanos: UInt64) throws -> [Action] {
        switch spec.kind {
        case .socketio, .socketioUpgrade: return try socketIOReceived(message, at: nanos)
        case .native: return try nativeReceived(message, at: nanos)
        case .stomp: return try stompReceived(message, at: nanos)
        case .nchan:
            message.withUnsafeReadableBytes { recordMessage($0, at: nanos) }
            return []
        }
    }

    func recordMessage(_ bytes: UnsafeRawBufferPointer, at nanos: UInt64) {
        if !markers.record(bytes, socket: spec.index, at: nanos, in: log, stomp: spec.kind == .stomp) { log.other() }
    }

    func ready() {
        if handshake.finish(ready: true) { log.ready(socket: spec.index) }
    }
}

/// Whole WebSocket messages (fragments joined) as byte buffers; nil when the connection ended.
public struct WebSocketMessageReader {
    var iterator: WebSocketInboundStream.AsyncIterator

    public init(_ inbound: WebSocketInboundStream) { iterator = inbound.makeAsyncIterator() }

    public mutating func next() async throws -> ByteBuffer? {
        guard var frame = try await iterator.next() else { return nil }
        var buffer = frame.data
        while !frame.fin {
            guard let more = try await iterator.next() else { return nil }
            var data = more.data
            buffer.writeBuffer(&data)
            frame = more
        }
        return buffer
    }
}

/// A received frame as a JSON object, if it is one.
public func jsonObject(_ buffer: ByteBuffer) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))) as? [String: Any]
}

struct LoadGenProtocolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
