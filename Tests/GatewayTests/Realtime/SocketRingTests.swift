#if canImport(Glibc)
    import Glibc
#endif
import Testing

@testable import GatewayApp

/// `SocketRing` on socket pairs: several sends in one submission, each result its own.
@Suite("Several sockets' writes in one io_uring submission")
struct SocketRingTests {
    private static func pair(sendBuffer: Int32? = nil) throws -> (CInt, CInt) {
        var fds: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        if var size = sendBuffer { _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        return (fds[0], fds[1])
    }

    private static func read(_ fd: CInt) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
            guard count > 0 else { return bytes }
            bytes += chunk[..<count]
        }
    }

    @Test(
        "one submission: each socket takes its buffers in order, a full one what fits (or -EAGAIN), a closed peer's fails (-EPIPE) without stopping the others or raising SIGPIPE; a full submission refuses more; the ring is reused"
    )
    func submission() throws {
        // This machine's kernel allows io_uring (Linux 6.0+; CI runs on the same kind of machine).
        let ring = try #require(SocketRing(entries: 4), "io_uring is unavailable here")
        #expect(ring.capacity == 4)
        let plain = try Self.pair()
        let full = try Self.pair(sendBuffer: 4_096)
        let closed = try Self.pair()
        close(closed.1)
        var big = [UInt8](repeating: UInt8(ascii: "b"), count: 1 << 20)
        for round in 0..<2 {
            let head = Array("head \(round);".utf8)
            let body = Array("body \(round)".utf8)
            var results = [Int](repeating: 0, count: 4)
            head.withUnsafeBytes { headBytes in
                body.withUnsafeBytes { bodyBytes in
                    big.withUnsafeMutableBytes { bigBytes in
                        let vectors = [
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress), iov_len: headBytes.count),
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress), iov_len: bodyBytes.count),
                            iovec(iov_base: bigBytes.baseAddress, iov_len: bigBytes.count),
                        ]
                        vectors.withUnsafeBufferPointer { vectors in
                            guard let base = vectors.baseAddress else { return }
                            #expect(ring.add(plain.0, base, count: 2) == 0)
                            #expect(ring.add(full.0, base + 2, count: 1) == 1)
                            #expect(ring.add(closed.0, base, count: 2) == 2)
                            #expect(ring.add(plain.0, base + 1, count: 1) == 3)
                            #expect(ring.add(plain.0, base, count: 1) == nil, "the submission is full")
                            results.withUnsafeMutableBufferPointer { if let results = $0.baseAddress { ring.issue(into: results) } }
                        }
                    }
                }
            }
            #expect(results[0] == head.count + body.count)
            #expect(results[3] == body.count)
            #expect(Self.read(plain.1) == head + body + body, "in the order queued")
            // The first round fills the small buffer partly; the second finds it full.
            if round == 0 {
                #expect(results[1] > 0 && results[1] < big.count)
            } else {
                #expect(results[1] == -Int(EAGAIN))
            }
            #expect(results[2] == -Int(EPIPE))
        }
        for fd in [plain.0, plain.1, full.0, full.1, closed.0] { close(fd) }
    }
}
