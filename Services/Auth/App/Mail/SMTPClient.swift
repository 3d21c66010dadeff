import Foundation
import NIOCore
import NIOPosix

/// A failed delivery: what went wrong, for the log (never shown to clients).
struct SMTPError: Error, CustomStringConvertible {
    let description: String
}

/// A minimal SMTP client (RFC 5321) for one message per connection: greeting, `EHLO` (`HELO`
/// for servers that refuse it), `AUTH PLAIN` when a username is configured, `MAIL FROM`,
/// `RCPT TO`, `DATA` (dot-stuffed), `QUIT`. Plain TCP only: no STARTTLS and no implicit TLS, so
/// use a relay on a trusted network (docs/configuration.md). The whole delivery, connection
/// included, is bounded by `settings.timeout`.
struct SMTPClient: Sendable {
    let settings: SMTPSettings

    /// Longest reply line accepted (RFC 5321 allows 512 octets); longer is a protocol error.
    static let maxLineBytes = 2048
    /// Most lines in one (multi-line) reply.
    static let maxReplyLines = 64

    /// A text email: a UTF-8 subject and body (sent base64-encoded, so any text is 7-bit clean).
    struct Message: Sendable {
        var to: String
        var subject: String
        var body: String
    }

    func send(_ message: Message) async throws {
        guard settings.isConfigured else { throw SMTPError(description: "no SMTP host configured (auth.smtp.host)") }
        guard Self.isSafeAddress(message.to) else { throw SMTPError(description: "recipient is not a plain address") }
        let timeout = settings.timeout
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        let underlying = channel.channel
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    var session = Session(inbound: inbound.makeAsyncIterator(), outbound: outbound)
                    try await dialogue(message, &session)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                // Closing ends a read the dialogue is blocked in.
                underlying.close(promise: nil)
                throw SMTPError(description: "SMTP delivery took longer than \(timeout)")
            }
            defer { group.cancelAll() }
            _ = try await group.next()
        }
    }

    private func dialogue(_ message: Message, _ session: inout Session) async throws {
        try await session.expect([220], "greeting")
        let name = Self.domain(of: settings.from) ?? "localhost"
        let ehlo = try await session.command("EHLO \(name)")
        if !(200..<300).contains(ehlo.code) {
            try await session.expect([250], "HELO", after: "HELO \(name)")
        }
        if !settings.username.isEmpty {
            let credentials = Data("\0\(settings.username)\0\(settings.password)".utf8).base64EncodedString()
            try await session.expect([235], "AUTH PLAIN", after: "AUTH PLAIN \(credentials)", logged: "AUTH PLAIN ***")
        }
        try await session.expect([250], "MAIL FROM", after: "MAIL FROM:<\(settings.from)>")
        try await session.expect([250, 251], "RCPT TO", after: "RCPT TO:<\(message.to)>")
        try await session.expect([354], "DATA", after: "DATA")
        try await session.write(Self.dotStuffed(Self.format(message, from: settings.from)) + ".\r\n")
        try await session.expect([250], "message")
        // The message is accepted; a failing QUIT changes nothing.
        _ = try? await session.command("QUIT")
    }

    /// The message as it goes after `DATA`: headers, a blank line, the base64 body; CRLF lines.
    static func format(_ message: Message, from: String, date: Date = Date(), id: UUID = UUID()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        // Canonical text: CRLF line breaks.
        let text = message.body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        let body = Data(text.utf8).base64EncodedString()
        var lines = [
            "From: <\(from)>",
            "To: <\(message.to)>",
            "Subject: \(encodedWord(message.subject))",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(id.uuidString.lowercased())@\(domain(of: from) ?? "localhost")>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=UTF-8",
            "Content-Transfer-Encoding: base64",
            "",
        ]
        var index = body.startIndex
        while index < body.endIndex {
            let end = body.index(index, offsetBy: 76, limitedBy: body.endIndex) ?? body.endIndex
            lines.append(String(body[index..<end]))
            index = end
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    /// RFC 5321 §4.5.2: a line that starts with a period gets one more, so no line of the
    /// message reads as the end-of-data marker.
    static func dotStuffed(_ data: String) -> String {
        data.components(separatedBy: "\r\n").map { $0.hasPrefix(".") ? "." + $0 : $0 }.joined(separator: "\r\n")
    }

    /// A header text as an RFC 2047 encoded word when it is not plain ASCII.
    static func encodedWord(_ text: String) -> String {
        if text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F }) { return text }
        return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?="
    }

    static func domain(of address: String) -> String? {
        guard let at = address.lastIndex(of: "@") else { return nil }
        let domain = address[address.index(after: at)...]
        return domain.isEmpty ? nil : String(domain)
    }

    /// An address safe to put in a command or header: one `@`, no spaces, controls or brackets.
    static func isSafeAddress(_ address: String) -> Bool {
        guard !address.isEmpty, address.utf8.count <= 254, address.filter({ $0 == "@" }).count == 1 else { return false }
        return address.unicodeScalars.allSatisfy { scalar in
            scalar.value > 0x20 && scalar.value != 0x7F && !"<>()[]\\,;:\"".unicodeScalars.contains(scalar)
        }
    }
}

extension SMTPClient {
    /// One reply: its code and text lines.
    struct Reply {
        var code: Int
        var lines: [String]
    }

    /// The connection's two directions and the bytes read but not yet split into lines.
    struct Session {
        var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        var pending = ByteBuffer()

        init(inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
            self.inbound = inbound
            self.outbound = outbound
        }

        mutating func write(_ text: String) async throws {
            try await outbound.write(ByteBuffer(string: text))
        }

        mutating func command(_ line: String) async throws -> Reply {
            try await write(line + "\r\n")
            return try await reply()
        }

        /// Sends `command` (when given), then requires one of `codes`.
        mutating func expect(_ codes: [Int], _ stage: String, after command: String? = nil, logged: String? = nil) async throws {
            let answer: Reply
            if let command { answer = try await self.command(command) } else { answer = try await reply() }
            guard codes.contains(answer.code) else {
                throw SMTPError(
                    description: "\(stage): server answered \(answer.code) \(answer.lines.joined(separator: " | ")) to \(logged ?? command ?? "connect")")
            }
        }

        /// Reads one reply: `ddd-text` lines then a final `ddd text` line.
        mutating func reply() async throws -> Reply {
            var lines: [String] = []
            while lines.count < SMTPClient.maxReplyLines {
                let line = try await readLine()
                let bytes = Array(line.utf8)
                guard bytes.count >= 3, let code = Int(String(line.prefix(3))), (200...599).contains(code) else {
                    throw SMTPError(description: "not an SMTP reply: \(line.prefix(80))")
                }
                lines.append(String(line.dropFirst(4)))
                if bytes.count == 3 || bytes[3] == UInt8(ascii: " ") { return Reply(code: code, lines: lines) }
                guard bytes[3] == UInt8(ascii: "-") else { throw SMTPError(description: "not an SMTP reply: \(line.prefix(80))") }
            }
            throw SMTPError(description: "reply longer than \(SMTPClient.maxReplyLines) lines")
        }

        private mutating func readLine() async throws -> String {
            while true {
                if let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                    let length = newline - pending.readerIndex
                    var line = pending.readString(length: length) ?? ""
                    pending.moveReaderIndex(forwardBy: 1)
                    if line.hasSuffix("\r") { line.removeLast() }
                    pending.discardReadBytes()
                    return line
                }
                guard pending.readableBytes <= SMTPClient.maxLineBytes else { throw SMTPError(description: "reply line over \(SMTPClient.maxLineBytes) bytes") }
                guard var chunk = try await inbound.next() else { throw SMTPError(description: "connection closed by the server") }
                pending.writeBuffer(&chunk)
            }
        }
    }
}
