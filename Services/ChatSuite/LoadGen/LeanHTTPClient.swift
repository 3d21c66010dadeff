import Common
import NIOCore
import NIOPosix
import Synchronization

/// The load generator's HTTP/1.1 client for its timed sends: keep-alive connections that each
/// carry one request at a time, the request written as one buffer, the response framed by
/// `Content-Length` or chunked encoding and handed back whole. AsyncHTTPClient (which the setup
/// keeps using) spent about a third of the generator's CPU on these sends (docs/benchmarks.md,
/// part 11); the generator shares the machine with the suite it measures, so what it spends the
/// suite cannot.
final class LeanHTTPClient: Sendable {
    struct Response: Sendable {
        let status: Int
        let body: ByteBuffer
    }

    enum Failure: Error, Equatable, CustomStringConvertible {
        case badBaseURL(String)
        case malformedResponse(String)
        case responseTooLarge
        case timedOut
        case connectionClosed

        var description: String {
            switch self {
            case .badBaseURL(let base): "not an http://host:port base URL: \(base)"
            case .malformedResponse(let why): "malformed HTTP response: \(why)"
            case .responseTooLarge: "HTTP response over \(LeanHTTPResponseParser.maxBytes) bytes"
            case .timedOut: "no HTTP response within the timeout"
            case .connectionClosed: "connection closed before the response ended"
            }
        }
    }

    let host: String
    let port: Int
    private let timeout: TimeAmount
    private let idle = Mutex<[any Channel]>([])

    init(base: String, timeout: TimeAmount = .seconds(30)) throws {
        guard base.hasPrefix("http://") else { throw Failure.badBaseURL(base) }
        let authority = base.dropFirst("http://".count).prefix { $0 != "/" }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let host = parts.first, !host.isEmpty else { throw Failure.badBaseURL(base) }
        guard let port = parts.count == 2 ? Int(parts[1]) : 80, (1...65535).contains(port) else { throw Failure.badBaseURL(base) }
        self.host = String(host)
        self.port = port
        self.timeout = timeout
    }

    /// Sends `method path` with `headers` and `body` (a `Content-Length` is added) and returns the
    /// whole response. A connection whose exchange failed is closed, never reused.
    func send(_ method: String, _ path: String, headers: [(String, String)], body: String) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\n\r\n"
        let channel = try await connection()
        var request = channel.allocator.buffer(capacity: head.utf8.count + body.utf8.count)
        request.writeString(head)
        request.writeString(body)
        let promise = channel.eventLoop.makePromise(of: LeanHTTPResponseParser.Parsed.self)
        channel.writeAndFlush(LeanHTTPExchange(request: request, response: promise, timeout: timeout), promise: nil)
        do {
            let parsed = try await promise.futureResult.get()
            if parsed.keepAlive {
                idle.withLock { $0.append(channel) }
            } else {
                channel.close(promise: nil)
            }
            return Response(status: parsed.status, body: parsed.body)
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// Closes the idle connections.
    func close() {
        let channels = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for channel in channels { channel.close(promise: nil) }
    }

    private func connection() async throws -> any Channel {
        while let channel = idle.withLock({ $0.popLast() }) {
            if channel.isActive { return channel }
        }
        return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(LeanHTTPHandler()) }
            }
            .connect(host: host, port: port).get()
    }
}

/// One request and where its response goes.
struct LeanHTTPExchange: Sendable {
    let request: ByteBuffer
    let response: EventLoopPromise<LeanHTTPResponseParser.Parsed>
    let timeout: TimeAmount
}

/// Writes a request, then frames the bytes that come back into its response. One exchange at a
/// time per connection (the client never pipelines); bytes with no exchange waiting, a timeout or
/// the connection's end fail the exchange and close the connection.
final class LeanHTTPHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = LeanHTTPExchange
    typealias OutboundOut = ByteBuffer

    private var pending: (promise: EventLoopPromise<LeanHTTPResponseParser.Parsed>, timer: Scheduled<Void>)?
    private var parser = LeanHTTPResponseParser()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard pending == nil else {
            exchange.response.fail(LeanHTTPClient.Failure.malformedResponse("a request while another is in flight"))
            return
        }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let timer = context.eventLoop.scheduleTask(in: exchange.timeout) {
            loopBound.value.pipeline.syncOperations.fireErrorCaught(LeanHTTPClient.Failure.timedOut)
        }
        pending = (exchange.response, timer)
        context.writeAndFlush(wrapOutboundOut(exchange.request), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard let (promise, timer) = pending else {
            fail(context: context, LeanHTTPClient.Failure.malformedResponse("bytes with no request waiting"))
            return
        }
        do {
            guard let parsed = try parser.feed(&bytes) else { return }
            pending = nil
            timer.cancel()
            promise.succeed(parsed)
        } catch {
            fail(context: context, error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPending(LeanHTTPClient.Failure.connectionClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, error)
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        failPending(error)
        context.close(promise: nil)
    }

    private func failPending(_ error: any Error) {
        guard let (promise, timer) = pending else { return }
        pending = nil
        timer.cancel()
        promise.fail(error)
    }
}

/// Frames one HTTP/1.1 response from the bytes fed to it: the status, whether the connection
/// stays open, and the body (by `Content-Length`, chunked, or empty for 1xx/204/304). Bytes past
/// the response are refused (the client sends one request at a time).
struct LeanHTTPResponseParser {
    struct Parsed: Sendable {
        let status: Int
        let keepAlive: Bool
        let body: ByteBuffer
    }

    /// Head and body together.
    static let maxBytes = 8 << 20
    private var buffer = ByteBuffer()

    /// Appends `bytes`; returns the response once it is complete (and resets for the next).
    mutating func feed(_ bytes: inout ByteBuffer) throws -> Parsed? {
        buffer.writeBuffer(&bytes)
        guard buffer.readableBytes <= Self.maxBytes else { throw LeanHTTPClient.Failure.responseTooLarge }
        let view = buffer.readableBytesView
        guard let headEnd = Self.find([13, 10, 13, 10], in: view) else { return nil }
        let head = view[view.startIndex..<headEnd]
        let lines = head.split(separator: 10, omittingEmptySubsequences: false).map { line in
            line.last == 13 ? line.dropLast() : line[...]
        }
        guard let statusLine = lines.first, statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8) else {
            throw LeanHTTPClient.Failure.malformedResponse("no status line")
        }
        let digits = statusLine.dropFirst(9).prefix(3)
        guard digits.count == 3, digits.allSatisfy({ (48...57).contains($0) }) else {
            throw LeanHTTPClient.Failure.malformedResponse("status code")
        }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        var length: Int?
        var chunked = false
        var keepAlive = statusLine.starts(with: "HTTP/1.1".utf8)
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 58) else { continue }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased()
            let value = String(decoding: line[line.index(after: colon)...], as: UTF8.self).trimmingHTTPWhitespace().lowercased()
            switch name {
            case "content-length":
                guard let n = Int(value), n >= 0 else { throw LeanHTTPClient.Failure.malformedResponse("content-length \(value)") }
                length = n
            case "transfer-encoding": chunked = value.hasSuffix("chunked")
            case "connection":
                if value.contains("close") { keepAlive = false } else if value.contains("keep-alive") { keepAlive = true }
            default: break
            }
        }
        let bodyStart = headEnd + 4 - view.startIndex
        let body: ByteBuffer
        let consumed: Int
        if (100..<200).contains(status) || status == 204 || status == 304 {
            (body, consumed) = (ByteBuffer(), bodyStart)
        } else if chunked {
            guard let (decoded, end) = try Self.dechunk(buffer, from: bodyStart) else { return nil }
            (body, consumed) = (decoded, end)
        } else if let length {
            guard buffer.readableBytes - bodyStart >= length else { return nil }
            (body, consumed) = (buffer.getSlice(at: buffer.readerIndex + bodyStart, length: length) ?? ByteBuffer(), bodyStart + length)
        } else {
            throw LeanHTTPClient.Failure.malformedResponse("neither content-length nor chunked")
        }
        guard consumed == buffer.readableBytes else { throw LeanHTTPClient.Failure.malformedResponse("bytes past the response") }
        buffer.clear()
        return Parsed(status: status, keepAlive: keepAlive, body: body)
    }

    /// The chunked body starting `from` bytes into `buffer`'s readable bytes and where it ends,
    /// or nil while incomplete. Trailers are skipped.
    static func dechunk(_ buffer: ByteBuffer, from start: Int) throws -> (ByteBuffer, Int)? {
        let view = buffer.readableBytesView
        var at = view.startIndex + start
        var body = ByteBuffer()
        while true {
            guard let lineEnd = find([13, 10], in: view[at...]) else { return nil }
            let sizeText = view[at..<lineEnd].prefix { $0 != 59 }  // ";" starts an extension
            guard let size = Int(String(decoding: sizeText, as: UTF8.self).trimmingHTTPWhitespace(), radix: 16), size >= 0 else {
                throw LeanHTTPClient.Failure.malformedResponse("chunk size")
            }
            at = lineEnd + 2
            if size == 0 {
                // Trailers, then the empty line.
                while true {
                    guard let end = find([13, 10], in: view[at...]) else { return nil }
                    if end == at { return (body, end + 2 - view.startIndex) }
                    at = end + 2
                }
            }
            guard view.endIndex - at >= size + 2 else { return nil }
            body.writeBytes(view[at..<at + size])
            guard view[at + size] == 13, view[at + size + 1] == 10 else { throw LeanHTTPClient.Failure.malformedResponse("chunk end") }
            at += size + 2
        }
    }

    /// Where `needle` starts in `haystack` (an index of the underlying view), or nil.
    static func find(_ needle: [UInt8], in haystack: ByteBufferView) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = haystack.startIndex
        let last = haystack.endIndex - needle.count
        while i <= last {
            if haystack[i] == needle[0], haystack[i..<i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
