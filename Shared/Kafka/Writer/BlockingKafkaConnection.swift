import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// A connection to one Kafka broker on a blocking socket, for a thread that waits for its
/// answers anyway (`KafkaRecordWriter`): a request goes out with one `send`, and the thread
/// sleeps in `poll` until its answer is in — no event loop to hand the request to and no thread
/// to wake with the answer. Requests are answered in order; every wait is bounded by the
/// request's deadline, and a frame over 100 MiB or an answer out of order breaks the connection.
/// Not thread-safe: its owner serialises its use.
final class BlockingKafkaConnection {
    let address: KafkaBrokerAddress
    private let clientId: String
    private var fd: Int32
    private let giveUp: (@Sendable () -> Bool)?
    private var nextCorrelationId: Int32 = 1
    private var sent: [Int32] = []

    var isOpen: Bool { fd >= 0 }
    /// Requests sent whose answers have not been received yet.
    var awaitingAnswers: Int { sent.count }

    /// Whether the connection can carry a request: open, and — when it has sat idle for a second
    /// or more — not closed by the broker meanwhile (Kafka closes connections idle for
    /// `connections.max.idle.ms`). An idle connection with anything to read is closed or broken.
    var isUsable: Bool {
        guard fd >= 0 else { return false }
        guard sent.isEmpty, ContinuousClock.now - lastUsed >= .seconds(1) else { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) == 0 else {
            close()
            return false
        }
        return true
    }
    private var lastUsed = ContinuousClock.now

    /// Resolves and connects within `timeout`.
    /// - Parameter giveUp: checked at least every 100 ms while a call waits (connecting, sending,
    ///   receiving): once true, the call fails as if its deadline had passed (a thread that must
    ///   notice a shutdown while the broker is silent).
    init(to address: KafkaBrokerAddress, clientId: String, timeout: Duration, giveUp: (@Sendable () -> Bool)? = nil) throws {
        self.address = address
        self.clientId = clientId
        self.giveUp = giveUp
        fd = -1
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(address.host, String(address.port), &hints, &found)
        guard resolved == 0, let first = found else { throw KafkaConnectionFailed(address: address, reason: "cannot resolve the host") }
        defer { freeaddrinfo(found) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        let deadline = ContinuousClock.now + timeout
        while let info = candidate {
            candidate = info.pointee.ai_next
            let socketFD = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard socketFD >= 0 else { continue }
            if Self.connect(socketFD, info.pointee.ai_addr, info.pointee.ai_addrlen, until: deadline, giveUp: giveUp, error: &lastError) {
                var on: Int32 = 1
                setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                setsockopt(socketFD, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
                fd = socketFD
                return
            }
            Glibc.close(socketFD)
        }
        throw KafkaConnectionFailed(address: address, reason: lastError)
    }

    private static func connect(
        _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, until deadline: ContinuousClock.Instant,
        giveUp: (@Sendable () -> Bool)?, error: inout String
    ) -> Bool {
        if Glibc.connect(fd, address, length) == 0 { return true }
        guard errno == EINPROGRESS else {
            error = String(cString: strerror(errno))
            return false
        }
        guard wait(fd, for: Int16(POLLOUT), until: deadline, giveUp: giveUp) else {
            error = "connect timed out"
            return false
        }
        var status: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &size)
        if status != 0 { error = String(cString: strerror(status)) }
        return status == 0
    }

    /// Polls until `events` or `deadline`; false when the deadline passed first.
    /// With `giveUp`, in slices of at most 100 ms, false once it says so.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant, giveUp: (@Sendable () -> Bool)?) -> Bool {
        while true {
            var left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            if let giveUp {
                guard !giveUp() else { return false }
                left = min(left, .milliseconds(100))
            }
            let milliseconds = Int32(clamping: left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return true }  // the read or write that follows reports it
        }
    }

    /// Waits until one of `connections` has something to read (an answer, or its end) or until
    /// `deadline`: the indices of those that have, none when the deadline passed first.
    static func readable(_ connections: [BlockingKafkaConnection], until deadline: ContinuousClock.Instant) -> [Int] {
        var descriptors = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        while true {
            let left = max(deadline - ContinuousClock.now, .zero)
            let milliseconds = Int32(clamping: left.components.seconds * 1_000 + (left.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready > 0 { return descriptors.indices.filter { descriptors[$0].revents != 0 } }
            // An error of poll itself: the reads that follow report the connections' state.
            if ready < 0, errno != EINTR { return Array(descriptors.indices) }
            if ready == 0, ContinuousClock.now >= deadline { return [] }
        }
    }

    /// Sends one request (header v1); its answer is read by `receive`, in the order sent.
    func send(_ api: KafkaClientAPI, version: Int16, body: ByteBuffer, until deadline: ContinuousClock.Instant) throws {
        guard isOpen else { throw KafkaConnectionClosed() }
        let correlationId = nextCorrelationId
        nextCorrelationId = nextCorrelationId == .max ? 1 : nextCorrelationId + 1
        var frame = ByteBuffer()
        frame.reserveCapacity(body.readableBytes + 16 + clientId.utf8.count)
        frame.writeKafkaRequest(api: api.rawValue, version: version, correlationId: correlationId, clientId: clientId, body: body)
        while frame.readableBytes > 0 {
            var failure: Int32 = 0
            let written = frame.withUnsafeReadableBytes { bytes in
                let written = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
                if written < 0 { failure = errno }
                return written
            }
            if written > 0 {
                frame.moveReaderIndex(forwardBy: written)
            } else if written < 0, failure == EAGAIN || failure == EINTR {
                guard Self.wait(fd, for: Int16(POLLOUT), until: deadline, giveUp: giveUp) else { throw broken(KafkaRequestTimedOut()) }
            } else {
                throw broken(KafkaConnectionClosed())
            }
        }
        sent.append(correlationId)
    }

    /// The answer to the oldest request sent and not yet answered: its body after the correlation id.
    func receive(until deadline: ContinuousClock.Instant) throws -> ByteBuffer {
        guard isOpen, let expected = sent.first else { throw KafkaConnectionClosed() }
        var size = try read(4, until: deadline)
        guard let length = size.readInteger(endianness: .big, as: Int32.self), length >= 4, Int(length) <= KafkaFrameDecoder.maxFrame else {
            throw broken(KafkaWireError("an answer frame of a size no broker sends"))
        }
        var frame = try read(Int(length), until: deadline)
        guard frame.readInteger(endianness: .big, as: Int32.self) == expected else {
            throw broken(KafkaWireError("an answer the connection did not ask for"))
        }
        sent.removeFirst()
        lastUsed = .now
        return frame
    }

    private func read(_ count: Int, until deadline: ContinuousClock.Instant) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(count)
        while buffer.readableBytes < count {
            let wanted = count - buffer.readableBytes
            var got = 0
            var failure: Int32 = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { space in
                got = recv(fd, space.baseAddress, wanted, 0)
                if got < 0 { failure = errno }
                return max(got, 0)
            }
            if got > 0 { continue }
            if got < 0, failure == EAGAIN || failure == EINTR {
                guard Self.wait(fd, for: Int16(POLLIN), until: deadline, giveUp: giveUp) else { throw broken(KafkaRequestTimedOut()) }
            } else {
                throw broken(KafkaConnectionClosed())
            }
        }
        return buffer
    }

    /// Closes the connection (its unanswered requests are lost) and returns `error`.
    private func broken(_ error: any Error) -> any Error {
        close()
        return error
    }

    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
        sent.removeAll()
    }

    deinit { close() }
}

/// A broker could not be reached.
struct KafkaConnectionFailed: Error, CustomStringConvertible {
    var address: KafkaBrokerAddress
    var reason: String
    var description: String { "cannot connect to the Kafka broker \(address): \(reason)" }
}
