import NIOCore

/// What a connection's first request head says, read before the pipeline is chosen: enough to
/// route a WebSocket upgrade (the request line and whether it asks for one), nothing else.
struct RequestHeadPreview: Equatable, Sendable {
    let method: Substring
    /// The request target as sent (path and query).
    let target: Substring
    /// Whether an `Upgrade` header names `websocket`.
    let asksForWebSocket: Bool

    /// nil unless `head` is a whole request head (request line and headers, up to the blank
    /// line) with a well-formed request line.
    init?(_ head: Substring) {
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        guard let requestLine = lines.popFirst() else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), !parts[0].isEmpty, parts[1].hasPrefix("/") else { return nil }
        method = parts[0]
        target = parts[1]
        asksForWebSocket = lines.contains { line in
            guard let colon = line.firstIndex(of: ":") else { return false }
            return line[..<colon].lowercased() == "upgrade" && line[line.index(after: colon)...].lowercased().contains("websocket")
        }
    }
}

/// The first handler of a new connection: buffers the bytes of its first request head, then lets
/// `choose` configure the rest of the pipeline (after this handler) from the head, replays the
/// bytes into it and removes itself. A head that does not end within `maxHeadBytes`, or does not
/// parse, is chosen with `nil` (hummingbird's HTTP handlers answer it as they would).
final class RequestHeadSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    /// Configures the pipeline for the head; returns what to run once the bytes were replayed.
    typealias Choose = (RequestHeadPreview?, ChannelPipeline.SynchronousOperations) throws -> () -> Void

    private let maxHeadBytes: Int
    private let choose: Choose
    private let onFailure: (any Error) -> Void
    private var buffered: ByteBuffer?
    private var decided = false

    init(maxHeadBytes: Int, choose: @escaping Choose, onFailure: @escaping (any Error) -> Void) {
        self.maxHeadBytes = maxHeadBytes
        self.choose = choose
        self.onFailure = onFailure
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        if buffered == nil {
            buffered = bytes
        } else {
            buffered?.writeBuffer(&bytes)
        }
        guard let buffered else { return }
        let view = buffered.readableBytesView
        let end = Self.endOfHead(view)
        guard end != nil || buffered.readableBytes > maxHeadBytes else { return }
        let preview = end.flatMap { end in
            buffered.getString(at: buffered.readerIndex, length: end - view.startIndex).flatMap { RequestHeadPreview(Substring($0)) }
        }
        decide(context: context, preview: preview)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if decided { context.fireChannelReadComplete() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            onFailure(ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !decided else {
            context.fireErrorCaught(error)
            return
        }
        decided = true
        onFailure(error)
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The server is shutting down, or the client closed its side (half-closure is allowed),
        // and no whole head came: nothing to answer.
        if !decided, event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            decided = true
            onFailure(ChannelError.eof)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func decide(context: ChannelHandlerContext, preview: RequestHeadPreview?) {
        decided = true
        let then: () -> Void
        do {
            then = try choose(preview, context.pipeline.syncOperations)
        } catch {
            onFailure(error)
            context.close(promise: nil)
            return
        }
        if let bytes = buffered {
            buffered = nil
            context.fireChannelRead(wrapInboundOut(bytes))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        then()
    }

    /// The offset just past the blank line that ends a request head, if it is in `bytes`.
    static func endOfHead(_ bytes: ByteBufferView) -> Int? {
        var index = bytes.startIndex
        while index + 3 < bytes.endIndex {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 { return index + 4 }
            index += 1
        }
        return nil
    }
}
