import Common
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import LoadGen

@Suite("The load generator's lean HTTP/1.1 client")
struct LeanHTTPClientTests {
    private func parse(_ chunks: [String]) throws -> [LeanHTTPResponseParser.Parsed?] {
        var parser = LeanHTTPResponseParser()
        return try chunks.map { chunk in
            var bytes = ByteBuffer(string: chunk)
            return try parser.feed(&bytes)
        }
    }

    @Test("a Content-Length response, whole or in pieces")
    func contentLength() throws {
        let whole = try parse(["HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"])
        let parsed = try #require(whole[0])
        #expect(parsed.status == 200 && parsed.keepAlive && String(buffer: parsed.body) == #"{"a":1}"#)
        let pieces = try parse(["HTTP/1.1 404 Not", " Found\r\ncontent-length:  3\r", "\n\r\nab", "c"])
        #expect(pieces.prefix(3).allSatisfy { $0 == nil })
        let last = try #require(pieces[3])
        #expect(last.status == 404 && String(buffer: last.body) == "abc")
    }

    @Test("chunked bodies with extensions and trailers; empty bodies for 204")
    func chunkedAndEmpty() throws {
        let chunked = try parse(["HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n wo", "rld\r\n0\r\nX-T: 1\r\n\r\n"])
        #expect(chunked[0] == nil)
        let parsed = try #require(chunked[1])
        #expect(parsed.status == 201 && String(buffer: parsed.body) == "hello world")
        let empty = try #require(try parse(["HTTP/1.1 204 No Content\r\n\r\n"])[0])
        #expect(empty.status == 204 && empty.body.readableBytes == 0)
    }

    @Test("Connection: close and HTTP/1.0 end the connection's reuse")
    func keepAlive() throws {
        #expect(try #require(try parse(["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"])[0]).keepAlive == false)
        #expect(try #require(try parse(["HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"])[0]).keepAlive == false)
        #expect(try #require(try parse(["HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"])[0]).keepAlive)
    }

    @Test("malformed responses are errors, never a guess")
    func malformed() {
        for response in [
            "SMTP 220 hello\r\n\r\n", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            #expect(throws: LeanHTTPClient.Failure.self, "\(response)") { try parse([response]) }
        }
        var parser = LeanHTTPResponseParser()
        var huge = ByteBuffer(repeating: 65, count: LeanHTTPResponseParser.maxBytes + 1)
        #expect(throws: LeanHTTPClient.Failure.responseTooLarge) { try parser.feed(&huge) }
        #expect(throws: LeanHTTPClient.Failure.self) { try LeanHTTPClient(base: "https://example.com") }
        #expect(throws: LeanHTTPClient.Failure.self) { try LeanHTTPClient(base: "http://h:99999") }
    }

    @Test("against a server: the request's bytes, keep-alive reuse, a closing answer, a silent server")
    func live() async throws {
        let server = try await CannedHTTPServer.start()
        defer { server.stop() }
        let client = try LeanHTTPClient(base: "http://127.0.0.1:\(server.port)", timeout: .milliseconds(300))
        for n in 0..<3 {
            let response = try await client.send("POST", "/cl", headers: [("SesacKey", "k\(n)")], body: #"{"n":\#(n)}"#)
            #expect(response.status == 200 && String(buffer: response.body) == "hello")
        }
        #expect(server.connections == 1, "three sends on one kept-alive connection")
        let request = try #require(server.requests.last)
        #expect(request == "POST /cl HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nSesacKey: k2\r\nContent-Length: 7\r\n\r\n{\"n\":2}")
        let chunked = try await client.send("POST", "/chunked", headers: [], body: "")
        #expect(chunked.status == 201 && String(buffer: chunked.body) == "hello world")
        let closing = try await client.send("POST", "/close", headers: [], body: "")
        #expect(closing.status == 503)
        _ = try await client.send("POST", "/cl", headers: [], body: "")
        #expect(server.connections == 2, "a new connection after the server closed the last")
        await #expect(throws: LeanHTTPClient.Failure.timedOut) { try await client.send("POST", "/silent", headers: [], body: "") }
        let after = try await client.send("POST", "/cl", headers: [], body: "")
        #expect(after.status == 200 && server.connections == 3, "the timed-out connection is not reused")
        client.close()
    }
}

/// Answers each request by its path with a canned response (`/cl`, `/chunked`, `/close`) or
/// never (`/silent`), and records what it received.
final class CannedHTTPServer: Sendable {
    let channel: any Channel
    let port: Int
    private let state: Locked<(connections: Int, requests: [String])>

    private init(channel: any Channel, state: Locked<(connections: Int, requests: [String])>) throws {
        self.channel = channel
        self.port = try #require(channel.localAddress?.port)
        self.state = state
    }

    var connections: Int { state.value.connections }
    var requests: [String] { state.value.requests }

    static func start() async throws -> CannedHTTPServer {
        let state = Locked((connections: 0, requests: [String]()))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                state.withLock { $0.connections += 1 }
                return child.eventLoop.makeCompletedFuture { try child.pipeline.syncOperations.addHandler(Handler(state: state)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return try CannedHTTPServer(channel: channel, state: state)
    }

    func stop() { channel.close(promise: nil) }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let state: Locked<(connections: Int, requests: [String])>
        var received = ""

        init(state: Locked<(connections: Int, requests: [String])>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += String(buffer: unwrapInboundIn(data))
            guard let headEnd = received.range(of: "\r\n\r\n") else { return }
            let length =
                received[..<headEnd.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard received.utf8.count - received[..<headEnd.upperBound].utf8.count >= length else { return }
            let request = received
            received = ""
            state.withLock { $0.requests.append(request) }
            let path = request.split(separator: " ").dropFirst().first ?? ""
            let response: String
            switch path {
            case "/cl": response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
            case "/chunked": response = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            case "/close": response = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno"
            default: return
            }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response)), promise: nil)
            if path == "/close" { context.close(promise: nil) }
        }
    }
}
