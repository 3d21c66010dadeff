import HummingbirdWebSocket
import NIOCore

/// A client's WebSocket messages from its data frames, fragments joined.
///
/// `DetachedWebSocketHandler` hands each data frame here. An oversized message is `.tooLarge`,
/// so the protocol closes with its too-large code (hummingbird-websocket's message iterator, used
/// before, threw instead, and the client got a generic close: native 4000 unknown error).
///
/// Same rules as that message iterator: a message starts with a text or binary frame and goes on
/// with continuation frames; fragments may not add up to more than `maxBytes` (the first frame is
/// bounded by the server's frame limit); anything else ends the socket.
struct TextReassembly {
    enum Step: Equatable {
        /// A whole text message.
        case text(String)
        /// A whole binary message (its bytes are not kept: no protocol here speaks binary).
        case binary
        /// The message goes on in later frames.
        case partial
        /// Fragments adding up to more than `maxBytes`: the reading loop ends the socket.
        case tooLarge
        /// A continuation without a start, or a new message inside a fragmented one: the reading
        /// loop ends the socket.
        case violation
    }

    let maxBytes: Int
    private var pending: ByteBuffer?
    private var pendingIsBinary = false
    private var pendingBytes = 0
    private var inMessage = false

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    mutating func take(_ opcode: WebSocketDataFrame.Opcode, fin: Bool, data: ByteBuffer) -> Step {
        switch opcode {
        case .text, .binary:
            guard !inMessage else { return .violation }
            let binary = opcode == .binary
            if fin { return binary ? .binary : .text(String(buffer: data)) }
            inMessage = true
            pendingIsBinary = binary
            pendingBytes = data.readableBytes
            pending = binary ? nil : data
            return .partial
        case .continuation:
            guard inMessage else { return .violation }
            pendingBytes += data.readableBytes
            guard pendingBytes <= maxBytes else { return .tooLarge }
            if !pendingIsBinary {
                var data = data
                pending?.writeBuffer(&data)
            }
            guard fin else { return .partial }
            defer {
                pending = nil
                inMessage = false
                pendingBytes = 0
            }
            return pendingIsBinary ? .binary : .text(pending.map { String(buffer: $0) } ?? "")
        }
    }
}
