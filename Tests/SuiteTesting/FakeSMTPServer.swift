import Common
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An SMTP server for tests, on a real port of 127.0.0.1: it speaks enough RFC 5321 for a
/// client's delivery (greeting, EHLO/HELO, AUTH PLAIN, MAIL FROM, RCPT TO, DATA with
/// dot-stuffing, RSET, NOOP, QUIT), records every accepted message, and can be told to misbehave.
public final class FakeSMTPServer: Sendable {
    /// How the server treats deliveries.
    public enum Behaviour: Sendable {
        /// Accepts every message.
        case accept
        /// Refuses every recipient (550).
        case rejectRecipients
        /// Accepts the connection and never says a word (the client's timeout must end it).
        case silent
    }

    /// One accepted message.
    public struct Message: Sendable {
        public let from: String
        public let recipients: [String]
        /// After `DATA`, dot-stuffing undone, CRLF line breaks.
        public let data: String
        /// The `Subject:` header, RFC 2047 words decoded.
        public var subject: String? { Self.decodedWord(header("Subject") ?? "") }

        /// A header's value (first occurrence, case-insensitive name).
        public func header(_ name: String) -> String? {
            for line in data.components(separatedBy: "\r\n") {
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }

        /// The body as text (base64 and quoted-printable-free 7/8-bit bodies decoded).
        public var body: String {
            guard let range = data.range(of: "\r\n\r\n") else { return "" }
            let raw = String(data[range.upperBound...])
            if header("Content-Transfer-Encoding")?.lowercased() == "base64" {
                let joined = raw.components(separatedBy: "\r\n").joined()
                return Data(base64Encoded: joined).flatMap { String(data: $0, encoding: .utf8) } ?? ""
            }
            return raw
        }

        /// The first run of exactly six digits in the body (a verification code).
        public var code: String? {
            let scalars = Array(body.unicodeScalars)
            var index = 0
            while index < scalars.count {
                guard CharacterSet.decimalDigits.contains(scalars[index]), scalars[index].isASCII else {
                    index += 1
                    continue
                }
                var end = index
                while end < scalars.count, scalars[end].isASCII, CharacterSet.decimalDigits.contains(scalars[end]) { end += 1 }
                if end - index == 6 { return String(String.UnicodeScalarView(scalars[index..<end])) }
                index = end
            }
            return nil
        }

        static func decodedWord(_ text: String) -> String {
            guard text.hasPrefix("=?"), text.hasSuffix("?="), text.lowercased().hasPrefix("=?utf-8?b?") else { return text }
            let encoded = text.dropFirst(10).dropLast(2)
            return Data(base64Encoded: String(encoded)).flatMap { String(data: $0, encoding: .utf8) } ?? text
        }
    }

    private struct State {
        var messages: [Message] = []
        /// `user:password` of every AUTH PLAIN.
        var logins: [String] = []
        var connections = 0
        /// Connections that, the server silent, closed without a byte sent (`.silent` only).
        var closedWaitingForGreeting = 0
    }

    public let port: Int
    public let behaviour: Behaviour
    /// When set, AUTH PLAIN must carry these (535 otherwise) and mail needs a login first.
    public let credentials: (username: String, password: String)?
    private let state = Mutex(State())
    private let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    private let accepting = Mutex<Task<Void, Never>?>(nil)

    private init(
        server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, behaviour: Behaviour,
        credentials: (username: String, password: String)?
    ) {
        self.server = server
        self.port = server.channel.localAddress?.port ?? 0
        self.behaviour = behaviour
        self.credentials = credentials
    }

    /// Starts a server on a free port of 127.0.0.1.
    public static func start(behaviour: Behaviour = .accept, credentials: (username: String, password: String)? = nil) async throws -> FakeSMTPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child) }
            }
        let server = FakeSMTPServer(server: channel, behaviour: behaviour, credentials: credentials)
        let task = Task<Void, Never> {
            try? await channel.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        group.addTask { await server.serve(connection) }
                    }
                }
            }
        }
        server.accepting.withLock { $0 = task }
        return server
    }

    /// Runs `body` with a started server and stops it afterwards.
    public static func with(
        behaviour: Behaviour = .accept, credentials: (username: String, password: String)? = nil,
        _ body: @Sendable (FakeSMTPServer) async throws -> Void
    ) async throws {
        let server = try await start(behaviour: behaviour, credentials: credentials)
        do {
            try await body(server)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Stops listening and ends open connections.
    public func stop() async {
        try? await server.channel.close()
        let task = accepting.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    public var messages: [Message] { state.withLock { $0.messages } }
    public var logins: [String] { state.withLock { $0.logins } }
    public var connectionCount: Int { state.withLock { $0.connections } }
    /// With `.silent`: the connections that waited for the greeting (sent nothing) and were then
    /// closed, as an SMTP client that gives up does. A client that speaks first is not one: the
    /// suite's tests leave Kafka clients reconnecting to their stopped brokers' ports, and such a
    /// port can be this server's once freed.
    public var closedWaitingForGreeting: Int { state.withLock { $0.closedWaitingForGreeting } }

    /// The first message to `recipient`, waiting for it up to `timeout`.
    public func message(to recipient: String, timeout: Duration = .seconds(10)) async throws -> Message {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let message = messages.first(where: { $0.recipients.contains { $0.lowercased() == recipient.lowercased() } }) { return message }
            guard ContinuousClock.now < deadline else { throw TimeoutError(what: "a message to \(recipient)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// All messages to `recipient` so far.
    public func messages(to recipient: String) -> [Message] {
        messages.filter { $0.recipients.contains { $0.lowercased() == recipient.lowercased() } }
    }

    // MARK: one connection

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        state.withLock { $0.connections += 1 }
        try? await connection.executeThenClose { inbound, outbound in
            var lines = LineReader(inbound: inbound.makeAsyncIterator())
            func say(_ text: String) async throws { try await outbound.write(ByteBuffer(string: text + "\r\n")) }
            if behaviour == .silent {
                // Say nothing; read until the client gives up and closes.
                var spoke = false
                while try await lines.inbound.next() != nil { spoke = true }
                if !spoke { state.withLock { $0.closedWaitingForGreeting += 1 } }
                return
            }
            try await say("220 fake.test ESMTP ready")
            var from: String?
            var recipients: [String] = []
            var authenticated = credentials == nil
            while let line = try await lines.next() {
                let upper = line.uppercased()
                if upper.hasPrefix("EHLO ") {
                    try await say("250-fake.test greets you")
                    try await say("250-AUTH PLAIN")
                    try await say("250 8BITMIME")
                } else if upper.hasPrefix("HELO ") {
                    try await say("250 fake.test")
                } else if upper.hasPrefix("AUTH PLAIN ") {
                    let decoded = Data(base64Encoded: String(line.dropFirst(11))).map { Array($0) } ?? []
                    let fields = decoded.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                    let login = fields.count == 3 ? "\(fields[1]):\(fields[2])" : ""
                    state.withLock { $0.logins.append(login) }
                    if let credentials, login != "\(credentials.username):\(credentials.password)" {
                        try await say("535 5.7.8 authentication failed")
                    } else {
                        authenticated = true
                        try await say("235 2.7.0 authenticated")
                    }
                } else if upper.hasPrefix("MAIL FROM:") {
                    guard authenticated else {
                        try await say("530 5.7.0 authentication required")
                        continue
                    }
                    from = Self.address(in: line)
                    recipients = []
                    try await say("250 2.1.0 ok")
                } else if upper.hasPrefix("RCPT TO:") {
                    guard from != nil else {
                        try await say("503 5.5.1 MAIL first")
                        continue
                    }
                    if behaviour == .rejectRecipients {
                        try await say("550 5.1.1 no such user")
                    } else {
                        recipients.append(Self.address(in: line))
                        try await say("250 2.1.5 ok")
                    }
                } else if upper == "DATA" {
                    guard let sender = from, !recipients.isEmpty else {
                        try await say("503 5.5.1 RCPT first")
                        continue
                    }
                    try await say("354 end with <CRLF>.<CRLF>")
                    var data: [String] = []
                    while let dataLine = try await lines.next() {
                        if dataLine == "." { break }
                        data.append(dataLine.hasPrefix("..") ? String(dataLine.dropFirst()) : dataLine)
                    }
                    let message = Message(from: sender, recipients: recipients, data: data.map { $0 + "\r\n" }.joined())
                    state.withLock { $0.messages.append(message) }
                    from = nil
                    recipients = []
                    try await say("250 2.0.0 queued")
                } else if upper == "RSET" {
                    from = nil
                    recipients = []
                    try await say("250 ok")
                } else if upper == "NOOP" {
                    try await say("250 ok")
                } else if upper == "QUIT" {
                    try await say("221 bye")
                    return
                } else {
                    try await say("502 5.5.2 command not implemented")
                }
            }
        }
    }

    /// `MAIL FROM:<a@b> SIZE=…` → `a@b`.
    static func address(in line: String) -> String {
        guard let open = line.firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else {
            return String(line.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
        }
        return String(line[line.index(after: open)..<close])
    }

    /// CRLF (or LF) lines from a connection.
    struct LineReader {
        var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        var pending = ByteBuffer()

        mutating func next() async throws -> String? {
            while true {
                if let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                    var line = pending.readString(length: newline - pending.readerIndex) ?? ""
                    pending.moveReaderIndex(forwardBy: 1)
                    pending.discardReadBytes()
                    if line.hasSuffix("\r") { line.removeLast() }
                    return line
                }
                guard var chunk = try await inbound.next() else { return nil }
                pending.writeBuffer(&chunk)
            }
        }
    }
}
