import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking Kafka protocol client written for the tests, independent of the broker's own
/// encoder: it sends hand-built requests (or hostile bytes) and reads raw responses.
final class RawKafkaClient {
    private let fd: Int32
    private var correlation: Int32 = 0

    init(bootstrap: String) throws {
        let parts = bootstrap.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw RawKafkaError("bootstrap \(bootstrap)") }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawKafkaError("socket") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw RawKafkaError("connect")
        }
    }

    deinit { close(fd) }

    func sendRaw(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawKafkaError("send") }
            sent += n
        }
    }

    /// Sends one request (header v1) and returns its response after the correlation id.
    func request(api: Int16, version: Int16, body: [UInt8]) throws -> RawReader {
        try send(api: api, version: version, body: body)
        return try response()
    }

    /// Sends one request without reading its response (`response()` reads it).
    func send(api: Int16, version: Int16, body: [UInt8]) throws {
        correlation += 1
        var frame = RawWriter()
        frame.int16(api)
        frame.int16(version)
        frame.int32(correlation)
        frame.string("raw-test")
        frame.bytes.append(contentsOf: body)
        var sized = RawWriter()
        sized.int32(Int32(frame.bytes.count))
        try sendRaw(sized.bytes + frame.bytes)
    }

    /// The response to the last request sent, after its correlation id.
    func response() throws -> RawReader {
        var reader = RawReader(try receive())
        guard try reader.int32() == correlation else { throw RawKafkaError("correlation id") }
        return reader
    }

    private func receive() throws -> [UInt8] {
        var size = RawReader(try read(4))
        return try read(Int(try size.int32()))
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw RawKafkaError(n == 0 ? "closed by the broker" : "receive") }
            got += n
        }
        return out
    }

    /// Whether the broker has sent something (or closed the connection) within `timeout`: nothing
    /// is read. A signal interrupting the wait resumes it for the time left (an interrupted `poll`
    /// had read as "no answer" at once); another `poll` error reads as an answer, and the read that
    /// follows meets the broken connection.
    func hasAnswer(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = max(.zero, ContinuousClock.now.duration(to: deadline))
            let milliseconds = Int32(clamping: left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&entry, 1, milliseconds)
            if ready >= 0 { return ready > 0 }
            guard errno == EINTR else { return true }
        }
    }

    /// Whether the broker closed this connection (within the receive timeout).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}

struct RawKafkaError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct RawWriter {
    var bytes: [UInt8] = []
    mutating func int8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    mutating func int16(_ v: Int16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func int32(_ v: Int32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func int64(_ v: Int64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func string(_ s: String) {
        int16(Int16(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }
    mutating func zigzag(_ v: Int64) {
        var z = UInt64(bitPattern: (v << 1) ^ (v >> 63))
        while z >= 0x80 {
            bytes.append(UInt8(z & 0x7F) | 0x80)
            z >>= 7
        }
        bytes.append(UInt8(z))
    }
}

struct RawReader {
    var bytes: [UInt8]
    var at = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard at + n <= bytes.count else { throw RawKafkaError("short response") }
        defer { at += n }
        return bytes[at..<at + n]
    }
    mutating func int16() throws -> Int16 { try take(2).reduce(0) { $0 << 8 | Int16($1) } }
    mutating func int32() throws -> Int32 { try take(4).reduce(0) { $0 << 8 | Int32($1) } }
    mutating func int64() throws -> Int64 { try take(8).reduce(0) { $0 << 8 | Int64($1) } }
    mutating func string() throws -> String { String(decoding: try take(Int(try int16())), as: UTF8.self) }
}

/// A v2 record batch built by hand: uncompressed records with the given timestamps, for one
/// idempotent producer (or none: id -1), CRC-32C included.
func recordBatch(timestamps: [Int64], producerId: Int64 = -1, epoch: Int16 = -1, baseSequence: Int32 = -1, valueSize: Int = 8) -> [UInt8] {
    let first = timestamps.first ?? 0
    var records = RawWriter()
    for (i, t) in timestamps.enumerated() {
        var record = RawWriter()
        record.int8(0)
        record.zigzag(t - first)
        record.zigzag(Int64(i))
        record.zigzag(-1)  // no key
        record.zigzag(Int64(valueSize))
        record.bytes.append(contentsOf: [UInt8](repeating: UInt8(ascii: "v"), count: valueSize))
        record.zigzag(0)  // no headers
        records.zigzag(Int64(record.bytes.count))
        records.bytes.append(contentsOf: record.bytes)
    }
    var tail = RawWriter()  // from the attributes on: what the CRC covers
    tail.int16(0)
    tail.int32(Int32(timestamps.count - 1))
    tail.int64(first)
    tail.int64(timestamps.max() ?? 0)
    tail.int64(producerId)
    tail.int16(epoch)
    tail.int32(baseSequence)
    tail.int32(Int32(timestamps.count))
    tail.bytes.append(contentsOf: records.bytes)
    var batch = RawWriter()
    batch.int64(0)
    batch.int32(Int32(4 + 1 + 4 + tail.bytes.count))
    batch.int32(-1)
    batch.int8(2)
    batch.int32(Int32(bitPattern: crc32c(tail.bytes)))
    batch.bytes.append(contentsOf: tail.bytes)
    return batch.bytes
}

func crc32c(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
    }
    return ~crc
}
