#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CSocketRing
import NIOCore

/// An io_uring that sends several sockets' frames with one system call (`socket_ring.h`): a drain
/// that writes to many sockets (one message to a conversation's followers on this loop) pays one
/// `io_uring_enter` instead of a `sendmsg` each. Every send is `MSG_DONTWAIT` and issued inline, so
/// all results are known when the call returns; a socket whose buffer is full takes what fits, as
/// with `sendmsg`, and the rest goes through NIO. One per event loop, used only on it.
final class SocketRing {
    private let ring: OpaquePointer
    /// Sends per submission.
    let capacity: Int
    /// The next submission's sockets and whose they are (the drain's channel), kept between
    /// submissions so a drain allocates nothing for them.
    var items: [SocketDirectWrite.Item] = []
    var owners: [Int] = []

    /// Nil where the kernel refuses io_uring (too old, disabled, or filtered, as by Docker's default
    /// seccomp profile): the drain then sends with one `sendmsg` per socket.
    init?(entries: Int) {
        guard let ring = socket_ring_create(UInt32(entries)) else { return nil }
        self.ring = ring
        capacity = Int(socket_ring_capacity(ring))
    }

    deinit { socket_ring_destroy(ring) }

    /// Sends `items` in one submission (`SocketDirectWrite.send(_:through:_:)`), then empties them.
    func submit(_ each: (_ position: Int, _ owner: Int, _ item: SocketDirectWrite.Item, _ sent: Int) -> Void) {
        SocketDirectWrite.send(items, through: self) { position, sent in each(position, owners[position], items[position], sent) }
        items.removeAll(keepingCapacity: true)
        owners.removeAll(keepingCapacity: true)
    }

    /// Queues a send of `count` buffers on `fd`; its index in the submission, nil when it is full.
    func add(_ fd: CInt, _ vectors: UnsafePointer<iovec>, count: Int) -> Int? {
        let index = socket_ring_add(ring, fd, vectors, CInt(count))
        return index < 0 ? nil : Int(index)
    }

    /// Issues the queued sends; `results[index]` is the bytes send `index` took, or -errno.
    func issue(into results: UnsafeMutablePointer<Int>) { _ = socket_ring_submit(ring, results) }
}

extension SocketDirectWrite {
    /// One socket's frames for a shared submission (`send(_:through:)`), checked with `mayWrite`.
    struct Item {
        let frames: FrameList
        let transport: SocketTransport
    }

    /// Sends each item's frames on its socket with one submission of `ring` (at most its capacity
    /// of items), then calls `each` with each item's position and the bytes its socket took, in
    /// order (0 when it took none, or it is closed: the caller writes the rest through NIO).
    static func send(_ items: [Item], through ring: SocketRing, _ each: (_ position: Int, _ sent: Int) -> Void) {
        precondition(items.count <= ring.capacity)
        var pieces = 0
        for index in items.indices { pieces += items[index].frames.pieceCount }
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: max(pieces, 1)) { vectors in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: max(items.count, 1)) { indices in
                withUnsafeTemporaryAllocation(of: Int.self, capacity: max(items.count, 1)) { results in
                    guard let resultsBase = results.baseAddress else { return }
                    queue(items, from: 0, used: 0, vectors: vectors, indices: indices, ring: ring, results: resultsBase)
                    for position in items.indices {
                        let index = indices[position]
                        each(position, index < 0 ? 0 : max(0, results[index]))
                    }
                }
            }
        }
    }

    /// Queues item `position` inside its socket's and buffers' scoped accesses, then the next
    /// within them, and submits once all are queued: every descriptor and pointer the kernel reads
    /// is used within the access that gave it. Recursion depth: items plus pieces.
    private static func queue(
        _ items: [Item], from position: Int, used: Int, vectors: UnsafeMutableBufferPointer<iovec>, indices: UnsafeMutableBufferPointer<Int>,
        ring: SocketRing, results: UnsafeMutablePointer<Int>
    ) {
        guard position < items.count else {
            ring.issue(into: results)
            return
        }
        indices[position] = -1
        let ran: Void? = try? items[position].transport.withUnsafeTransport { fd in
            let rest = UnsafeMutableBufferPointer(rebasing: vectors[used...])
            _ = gather(items[position].frames, frame: 0, piece: 0, into: rest) { count in
                if let base = rest.baseAddress { indices[position] = ring.add(fd, base, count: count) ?? -1 }
                queue(items, from: position + 1, used: used + count, vectors: vectors, indices: indices, ring: ring, results: results)
                return 0
            }
        }
        // A closed channel: nothing of this item queued, the others still are.
        if ran == nil { queue(items, from: position + 1, used: used, vectors: vectors, indices: indices, ring: ring, results: results) }
    }
}
