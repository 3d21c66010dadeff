import NIOCore
import Synchronization

/// The WebSocket side of the protocols that queue frames on a `LiveConnection` (native, STOMP),
/// with no task while the socket is idle: a `DetachedWebSocketHandler` reads (pings, fragments,
/// back-pressure), each client text message goes to the protocol in order, in a short-lived task
/// (or, a heartbeat while none waits, at once on the loop), and frames go straight to the channel
/// (`ChannelWriter`).
enum LiveSocket {
    /// What to do with a client frame the protocol does not take.
    struct Refusals: Sendable {
        /// A binary frame.
        var binary: @Sendable (LiveConnection) -> Void
        /// A text message over the protocol's limit (the protocol sends its close).
        var tooLarge: @Sendable (LiveConnection, Int) -> Void
    }

    /// Serves `connection` on the upgraded `channel` (called on its loop) until either side ends
    /// it. Each text message goes to `receive` with the protocol's per-connection state (a native
    /// session, a STOMP link), which returns the state for the next message; messages are handled
    /// one at a time, so the state is never read and written at once. When the connection ends,
    /// `ended` gets the last state and must close the connection. On the server's shutdown,
    /// `onGracefulShutdown` runs (the protocol sends its close; the connection is dropped 3 s later).
    /// `immediate`, when given, may take a message at once on the channel's loop (a heartbeat:
    /// true when it did, with the state unchanged); it is asked only when no earlier message waits.
    static func attach<State: Sendable>(
        to channel: any Channel, batchers: EventLoopWriteBatchers, connection: LiveConnection, maxFrameBytes: Int,
        refusals: Refusals, initial: State, receive: @escaping @Sendable (String, State) async -> State,
        immediate: (@Sendable (String, State) -> Bool)? = nil,
        onGracefulShutdown: @escaping @Sendable () -> Void, ended: @escaping @Sendable (State) -> Void
    ) throws {
        let state = Mutex(initial)
        var atOnce: (@Sendable (String) -> Bool)?
        if let immediate {
            atOnce = { text in !connection.isClosing && immediate(text, state.withLock { $0 }) }
        }
        let handler = DetachedWebSocketHandler(
            maxMessageBytes: maxFrameBytes,
            events: .init(
                receive: { text in
                    guard !connection.isClosing else { return false }
                    let next = await receive(text, state.withLock { $0 })
                    state.withLock { $0 = next }
                    return !connection.isClosing
                },
                immediate: atOnce,
                binary: { refusals.binary(connection) },
                tooLarge: { refusals.tooLarge(connection, maxFrameBytes) },
                shutdown: onGracefulShutdown,
                closed: { ended(state.withLock { $0 }) }
            ))
        try channel.pipeline.syncOperations.addHandler(handler)
        connection.attach(ChannelWriter(detached: channel, batchers: batchers))
    }
}
