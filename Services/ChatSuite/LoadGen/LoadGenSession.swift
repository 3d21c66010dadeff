import Foundation
import HummingbirdWSClient
import NIOCore
import NIOWebSocket

/// One connected socket of the run, either protocol: performs the handshake (reporting ready to
/// `handshake`), then records every message it receives until the connection ends or the run
/// stops (task cancellation closes the WebSocket).
struct LoadGenSession {
    let spec: LoadGenSocketSpec
    let inbound: WebSocketInboundStream
    let outbound: WebSocketOutboundWriter
    let markers: DeliveryMarkers
    let log: DeliveryLog
    let handshake: HandshakeState

    func run() async throws {
        let outbound = self.outbound
        try await withTaskCancellationHandler {
            switch spec.kind {
            case .socketio, .socketioUpgrade: try await runSocketIO()
            case .native: try await runNative()
            case .stomp: try await runStomp()
            case .nchan: try await runNchan()
            }
        } onCancel: {
            Task { try? await outbound.close(.normalClosure, reason: "load generator done") }
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
