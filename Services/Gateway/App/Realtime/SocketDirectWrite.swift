#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import NIOCore

/// Writes a socket's frames with one `sendmsg` on its file descriptor, below NIO's channel, when
/// NIO holds nothing for it: the bytes a drain has for a socket usually all fit its send buffer,
/// and going through NIO for them (a pending write per buffer, its flush, the bookkeeping) was the
/// largest share of the gateway's user time per delivery (docs/benchmarks.md, parts 39–40).
///
/// NIO's invariants hold: the descriptor is used only inside NIO's scoped access on the channel's
/// loop (it cannot be closed meanwhile, or reused for another connection); only when NIO has no
/// write pending for the channel (nothing it wrote can be overtaken); and whatever the socket did
/// not take (a full send buffer, an error) is handed to NIO after the bytes it did take, so NIO
/// finishes the write, watches for writability and sees any error itself (and closes the channel).
/// The bytes are the ones NIO would have written below the frame encoder (`FrameOutput`): on the
/// gateway's WebSockets nothing sits between that encoder and the socket (the gateway serves plain
/// HTTP; TLS ends at the load balancer in front of it, README). A handler there that transforms
/// bytes (TLS) would need this off.
enum SocketDirectWrite {
    /// More pieces than this in one drain for one socket go through NIO.
    static let maxPieces = 64

    /// Sends `frames`' bytes on `target`'s socket, the transport under `context`'s channel. Returns
    /// how many bytes the socket took (0 when it took none, or the socket is closed: the caller
    /// writes the rest through NIO), or nil when the channel exposes no socket, NIO holds writes for
    /// it, or the frames have too many pieces (the caller writes them all through NIO).
    static func send(_ frames: FrameList, on context: ChannelHandlerContext, through target: FrameTarget) -> Int? {
        guard let transport = mayWrite(frames, on: context, through: target) else { return nil }
        let pieces = frames.pieceCount
        let sent = try? transport.withUnsafeTransport { fd in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: pieces) { vectors in
                gather(frames, frame: 0, piece: 0, into: vectors) { count in
                    sendAll(fd, vectors.baseAddress, count)
                }
            }
        }
        return sent ?? 0
    }

    /// The socket to write `frames` to directly, or nil when the channel exposes none, NIO holds
    /// writes for it, or the frames have too many pieces.
    static func mayWrite(_ frames: FrameList, on context: ChannelHandlerContext, through target: FrameTarget) -> SocketTransport? {
        guard let transport = target.transport, frames.pieceCount <= maxPieces else { return nil }
        if target.mayHold {
            guard let options = context.channel.syncOptions, (try? options.getOption(.bufferedWritableBytes)) == 0 else { return nil }
            if target.watching { target.mayHold = false }
        }
        return transport
    }

    /// Fills `vectors` with each frame's buffers (header and head, then shared and tail), each
    /// inside its own `withUnsafeReadableBytes`, then calls `body` with the count: every pointer is
    /// used within the access that gave it. Recursion depth is the number of pieces (≤ `maxPieces`).
    static func gather(
        _ frames: FrameList, frame: Int, piece: Int, into vectors: UnsafeMutableBufferPointer<iovec>, _ body: (Int) -> Int
    ) -> Int {
        guard frame < frames.count else { return body(piece) }
        return frames.withFrame(at: frame) { text in
            text.frameHead.withUnsafeReadableBytes { head in
                vectors[piece] = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count)
                guard let shared = text.shared, let tail = text.tail else {
                    return gather(frames, frame: frame + 1, piece: piece + 1, into: vectors, body)
                }
                return shared.withUnsafeReadableBytes { middle in
                    vectors[piece + 1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: middle.baseAddress), iov_len: middle.count)
                    return tail.withUnsafeReadableBytes { end in
                        vectors[piece + 2] = iovec(iov_base: UnsafeMutableRawPointer(mutating: end.baseAddress), iov_len: end.count)
                        return gather(frames, frame: frame + 1, piece: piece + 3, into: vectors, body)
                    }
                }
            }
        }
    }

    /// One `sendmsg` (retried on EINTR); the bytes taken, 0 on any error (EAGAIN: the send buffer
    /// is full; anything else NIO meets again when it writes the rest, and handles).
    private static func sendAll(_ fd: CInt, _ vectors: UnsafeMutablePointer<iovec>?, _ count: Int) -> Int {
        var message = msghdr()
        message.msg_iov = vectors
        message.msg_iovlen = numericCast(count)
        while true {
            let sent = sendmsg(fd, &message, CInt(MSG_NOSIGNAL) | CInt(MSG_DONTWAIT))
            if sent >= 0 { return sent }
            if errno == EINTR { continue }
            return 0
        }
    }

    /// What is left of `frames` after the socket took `sent` of their bytes, as the buffers to
    /// hand to NIO, in order.
    static func remainder(of frames: FrameList, after sent: Int) -> [ByteBuffer] {
        var skip = sent
        var rest: [ByteBuffer] = []
        for text in frames {
            for var buffer in text.pieces {
                if skip >= buffer.readableBytes {
                    skip -= buffer.readableBytes
                    continue
                }
                buffer.moveReaderIndex(forwardBy: skip)
                skip = 0
                rest.append(buffer)
            }
        }
        return rest
    }
}

/// A channel whose socket's descriptor NIO lends out (`withUnsafeTransport`, on its loop).
typealias SocketTransport = any NIOTransportAccessibleChannelCore<NIOBSDSocket.Handle>

/// A WebSocket's frames' way out, on its channel's loop: the frame encoder's context they enter
/// below (`FrameOutput`), the socket under it, and whether NIO may hold bytes for it, in one object
/// per socket (it replaced a separate watch handler and a context-and-socket pair; measured as no
/// CPU change, docs/benchmarks.md part 47, kept as the simpler shape).
///
/// In the pipeline it sits next to NIO's head, below every other handler of a WebSocket: it notes
/// that NIO was handed bytes for the channel (a control frame, the rest of a partial direct write,
/// any write through NIO). So a drain asks NIO whether it still holds bytes
/// (`bufferedWritableBytes`: a dozen dynamic casts in NIO's option lookup, 10 % of the gateway's
/// user time when asked per delivery) only after such a write, and goes straight to the socket
/// otherwise. A target made for a channel without one in its pipeline asks NIO every time.
final class FrameTarget: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer

    /// NIO may hold bytes for the channel: set by every write that passes here, cleared by a drain
    /// that found NIO's buffer empty. Starts set: the upgrade's response went out before this
    /// handler was added. Never cleared unless `watching`.
    var mayHold = true
    /// In the channel's pipeline, so it sees every write through NIO.
    let watching: Bool
    /// The context of the channel's `WebSocketFrameEncoder` (`FrameOutput` finds it at the first
    /// write) and the socket under the channel, if it exposes one.
    private(set) var encoder: ChannelHandlerContext?
    private(set) var transport: SocketTransport?

    /// A target for the channel's pipeline (the gateway's WebSocket upgrade adds one).
    init() { watching = true }

    /// A target for a channel without one in its pipeline.
    init(unwatchedFor encoder: ChannelHandlerContext, transport: SocketTransport?) {
        watching = false
        self.encoder = encoder
        self.transport = transport
    }

    /// Once, at the channel's first frames: where they enter, and the socket under the channel.
    func attach(encoder: ChannelHandlerContext, transport: SocketTransport?) {
        self.encoder = encoder
        self.transport = transport
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        mayHold = true
        context.write(data, promise: promise)
    }

    /// The pipeline is gone (the channel closed): no reference from here keeps the encoder's
    /// context or the channel alive, and a later drain reports its frames done, unwritten.
    func handlerRemoved(context: ChannelHandlerContext) {
        encoder = nil
        transport = nil
    }
}

extension OutboundText {
    /// The frame's buffers in wire order.
    var pieces: [ByteBuffer] {
        if let shared, let tail { [frameHead, shared, tail] } else { [frameHead] }
    }
}
