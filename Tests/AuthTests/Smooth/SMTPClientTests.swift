import Foundation
import ServiceKit
import SuiteTesting
import Testing

@testable import AuthApp

/// The SMTP client on its own, against the fake relay: the dialogue, dot-stuffing, headers.
@Suite("SMTP client")
struct SMTPClientTests {
    static func settings(port: Int, username: String = "", password: String = "") -> SMTPSettings {
        SMTPSettings(host: "127.0.0.1", port: port, from: "noreply@smooth.test", username: username, password: password, timeout: .seconds(5))
    }

    @Test("dot-stuffing: a line that starts with a period gets another; the end marker cannot appear in the data")
    func dotStuffing() {
        #expect(SMTPClient.dotStuffed("a\r\n.\r\n..b\r\nc.d\r\n") == "a\r\n..\r\n...b\r\nc.d\r\n")
        #expect(SMTPClient.dotStuffed(".start") == "..start")
    }

    @Test("the message: plain-ASCII or RFC 2047 subject, base64 UTF-8 body with CRLF lines of at most 76 characters")
    func format() throws {
        let text = SMTPClient.format(
            .init(to: "a@example.com", subject: "인증 코드", body: String(repeating: "코드 123456\n", count: 20)), from: "noreply@smooth.test")
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.contains("Subject: =?UTF-8?B?\(Data("인증 코드".utf8).base64EncodedString())?="))
        #expect(lines.contains("Content-Transfer-Encoding: base64") && lines.contains("From: <noreply@smooth.test>"))
        #expect(lines.allSatisfy { $0.utf8.count <= 78 } && text.hasSuffix("\r\n"))
        #expect(SMTPClient.encodedWord("plain subject") == "plain subject")
        #expect(!SMTPClient.isSafeAddress("a@b.c\r\nRCPT TO:<x@y.z>") && !SMTPClient.isSafeAddress("<a@b.c>") && SMTPClient.isSafeAddress("a.b+c@d.ef"))
    }

    @Test("a delivery through the fake relay: the text arrives intact, a dotted line included; AUTH PLAIN when configured")
    func deliver() async throws {
        try await FakeSMTPServer.with(credentials: ("user", "pa ss")) { smtp in
            let client = SMTPClient(settings: Self.settings(port: smtp.port, username: "user", password: "pa ss"))
            try await client.send(.init(to: "dest@example.com", subject: "Hello", body: "line one\n.\n..two\nend 654321"))
            let message = try await smtp.message(to: "dest@example.com")
            #expect(message.subject == "Hello" && message.from == "noreply@smooth.test")
            #expect(message.body == "line one\r\n.\r\n..two\r\nend 654321")
            #expect(message.code == "654321")
            #expect(smtp.logins == ["user:pa ss"])
            // Without credentials the relay refuses MAIL: the delivery fails.
            await #expect(throws: SMTPError.self) {
                try await SMTPClient(settings: Self.settings(port: smtp.port)).send(.init(to: "x@example.com", subject: "s", body: "b"))
            }
        }
    }

    @Test("no host, a closed port, a silent relay: errors, never hangs")
    func failures() async throws {
        await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: SMTPSettings(host: "", port: 25, from: "a@b.cd")).send(.init(to: "x@example.com", subject: "s", body: "b"))
        }
        let closed = try await FakeSMTPServer.start()
        let port = closed.port
        await closed.stop()
        await #expect(throws: (any Error).self) {
            try await SMTPClient(settings: Self.settings(port: port)).send(.init(to: "x@example.com", subject: "s", body: "b"))
        }
        try await FakeSMTPServer.with(behaviour: .silent) { smtp in
            var settings = Self.settings(port: smtp.port)
            settings.timeout = .milliseconds(300)
            let started = ContinuousClock.now
            await #expect(throws: SMTPError.self) { try await SMTPClient(settings: settings).send(.init(to: "x@example.com", subject: "s", body: "b")) }
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test("settings: a username without a password, a bad port or a missing from address refuse to start")
    func settingsValidation() throws {
        func make(_ env: [String: String]) throws -> SMTPSettings {
            try SMTPSettings(ServiceSettings(serviceName: "auth", defaults: AuthService.defaults, environment: env, arguments: ["auth"]))
        }
        let off = try make([:])
        #expect(!off.isConfigured && off.port == 25)
        #expect(try make(["AUTH_SMTP_HOST": "mail.local", "AUTH_SMTP_FROM": "a@b.cd"]).isConfigured)
        #expect(throws: StartupError.self) { try make(["AUTH_SMTP_HOST": "mail.local"]) }
        #expect(throws: StartupError.self) { try make(["AUTH_SMTP_HOST": "mail.local", "AUTH_SMTP_FROM": "a@b.cd", "AUTH_SMTP_USERNAME": "u"]) }
        #expect(throws: StartupError.self) { try make(["AUTH_SMTP_PORT": "0"]) }
        let withPassword = try make(["AUTH_SMTP_HOST": "mail.local", "AUTH_SMTP_FROM": "a@b.cd", "AUTH_SMTP_USERNAME": "u", "AUTH_SMTP_PASSWORD": "p"])
        #expect(withPassword.username == "u" && withPassword.password == "p")
    }
}
