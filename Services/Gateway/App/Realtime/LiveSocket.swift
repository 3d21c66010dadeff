import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import ServiceLifecycle

/// The WebSocket loop of the protocols that queue frames on a `LiveConnection` (native, STOMP):
/// one writer task drains the queue, the handler's task reads client text frames in order.
enum LiveSocket {
    /// What to do with a client frame the protocol does not take.
    struct Refusals: Sendable {
        /// A binary frame.
        var binary: @Sendable (LiveConnection) -> Void
        /// A text frame over the protocol's limit.
        var tooLarge: @Sendable (LiveConnection, Int) -> Void
    }

    /// Serves `connection` until either side ends it. Its frames go straight to the channel
    /// (`writer`, no writer task). Each text frame goes to `receive` with the protocol's
    /// per-connection state (a native session, a STOMP connection), which returns the state for
    /// the next frame. When reading ends, `ended` gets the last state and must close the
    /// connection; the close frame is sent before this returns.
    static func serve<State: Sendable>(
        inbound: WebSocketInboundStream, writer: ChannelWriter, connection: LiveConnection, maxFrameBytes: Int,
        refusals: Refusals, initial: State, receive: @escaping @Sendable (String, State) async -> State,
        onGracefulShutdown: @escaping @Sendable () -> Void, ended: @Sendable (State) -> Void
    ) async {
        connection.attach(writer)
        var state = initial
        await withGracefulShutdownHandler {
            // Fragments are joined by `TextReassembly`, which tells a too-large message apart.
            var frames = inbound.makeAsyncIterator()
            var reassembly = TextReassembly(maxBytes: maxFrameBytes)
            reading: while !connection.isClosing {
                guard let frame = try? await frames.next() else { break }
                let text: String
                switch reassembly.take(frame) {
                case .text(let whole): text = whole
                case .partial: continue
                case .binary:
                    refusals.binary(connection)
                    break reading
                case .tooLarge:
                    refusals.tooLarge(connection, maxFrameBytes)
                    break reading
                case .violation: break reading
                }
                // The server's frame limit is the largest protocol's, and hummingbird-websocket
                // checks `maxSize` only across fragments: enforce this protocol's limit here.
                guard text.utf8.count <= maxFrameBytes else {
                    refusals.tooLarge(connection, maxFrameBytes)
                    break
                }
                // Each frame is handled in a short-lived task: identify and resume go deep
                // (HTTP to chat, JSON), and a task keeps the stack slabs of its deepest call
                // for as long as it lives, which for this reading task is the connection's
                // life (heaptrack: ~9 KiB per idle socket from identify's HTTP call alone).
                let current = state
                state = await Task { await receive(text, current) }.value
            }
        } onGracefulShutdown: {
            onGracefulShutdown()
        }
        ended(state)
        // The protocol's close code, before hummingbird-websocket closes with its own.
        await connection.closeTask?.value
    }
}
