import Common
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SuiteTesting
import Testing

/// `/auth-server/send-mail` and `/auth-server/check-email` against a fake SMTP relay.
@Suite("Smooth /auth-server: email verification codes", .serialized)
struct SmoothEmailTests {
    static func auth(_ smtp: FakeSMTPServer, _ extra: [String: String] = [:]) -> StackService {
        .auth(env: ["AUTH_SMTP_HOST": "127.0.0.1", "AUTH_SMTP_PORT": String(smtp.port), "AUTH_SMTP_FROM": "noreply@smooth.test"].merging(extra) { $1 })
    }

    static func sendMail(_ s: Stack, _ email: String) async throws -> SmoothAnswer {
        try await s.smooth(.post, "/auth-server/send-mail?email=\(email.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? email)")
    }

    static func check(_ s: Stack, _ key: String, email: String? = nil) async throws -> SmoothAnswer {
        try await s.smooth(.get, "/auth-server/check-email?key=\(key)" + (email.map { "&email=\($0)" } ?? ""))
    }

    static func pendingCodes(_ s: Stack) async throws -> Int {
        let db = try #require(s.databases["auth"])
        for try await count in try await db.query("SELECT count(*) FROM email_codes WHERE verified_at IS NULL").decode(Int64.self) { return Int(count) }
        return 0
    }

    @Test("send-mail mails a six-digit code (not in the answer); check-email?key= confirms it once; a new code waits a minute (429 1429)")
    func flow() async throws {
        try await FakeSMTPServer.with { smtp async throws in
            try await Stack.run(services: [Self.auth(smtp)]) { s async throws in
                let email = SmoothAuth.email()
                let sent = try await Self.sendMail(s, email)
                #expect(sent.outcome == "200 1000", "\(sent.body)")
                #expect(sent.envelope?.keys.sorted() == ["code", "isSuccess", "message"], "no result: the code only goes by mail")

                let message = try await smtp.message(to: email)
                #expect(message.from == "noreply@smooth.test")
                #expect(message.header("From") == "<noreply@smooth.test>" && message.header("To") == "<\(email)>")
                #expect(message.subject == "[Smooth] 회원가입 인증 코드")
                let code = try #require(message.code, "no code in \(message.body)")
                #expect(message.body.contains("인증 코드") && message.body.contains(code))

                // Stored only as an HMAC.
                let db = try #require(s.databases["auth"])
                var plain = 0
                for try await n in try await db.query(
                    "SELECT count(*) FROM email_codes WHERE position(convert_to(\(code), 'UTF8') IN code_hash) > 0"
                ).decode(Int64.self) { plain = Int(n) }
                #expect(plain == 0)

                // A second code within the minute: refused with a clear wait.
                let again = try await Self.sendMail(s, email)
                #expect(again.outcome == "429 1429", "\(again.status) \(again.body)")
                let wait = try #require(again.response.headers[.retryAfter].flatMap(Int.init))
                #expect((1...60).contains(wait))
                #expect(smtp.messages(to: email).count == 1)

                #expect(try await Self.check(s, code == "000000" ? "000001" : "000000").outcome == "400 2180")
                #expect(try await Self.check(s, code).outcome == "200 1000")
                #expect(try await Self.check(s, code).outcome == "400 2180", "a code works once")
                #expect(try await Self.check(s, "12ab").outcome == "400 2180")
                #expect(try await s.smooth(.get, "/auth-server/check-email").outcome == "400 2100")

                // Signing up then: the address's code row is gone; a registered address gets no code.
                #expect(try await SmoothAuth.signUp(s, email: email, name: SmoothAuth.name()).outcome == "200 1000")
                #expect(try await Self.pendingCodes(s) == 0)
                #expect(try await Self.sendMail(s, email).outcome == "400 2210")
                #expect(try await Self.sendMail(s, "not-an-email").outcome == "400 2100")
                #expect(try await s.smooth(.post, "/auth-server/send-mail").outcome == "400 2100")
                #expect(smtp.messages(to: email).count == 1)
            }
        }
    }

    @Test("no SMTP host configured: send-mail is 2301 with a clear message, nothing stored, no crash")
    func notConfigured() async throws {
        try await Stack.run(services: [.auth]) { s async throws in
            let answer = try await Self.sendMail(s, SmoothAuth.email())
            #expect(answer.outcome == "400 2301", "\(answer.body)")
            #expect((answer.envelope?["message"] as? String)?.contains("메일 서버") == true)
            #expect(try await Self.pendingCodes(s) == 0)
        }
    }

    @Test("the relay refuses the recipient: 2301, and the code is taken back (asking again is not rate-limited)")
    func relayRefuses() async throws {
        try await FakeSMTPServer.with(behaviour: .rejectRecipients) { smtp async throws in
            try await Stack.run(services: [Self.auth(smtp)]) { s async throws in
                let email = SmoothAuth.email()
                #expect(try await Self.sendMail(s, email).outcome == "400 2301")
                #expect(try await Self.sendMail(s, email).outcome == "400 2301", "not 1429: the failed code was withdrawn")
                #expect(try await Self.pendingCodes(s) == 0)
                #expect(smtp.messages.isEmpty)
            }
        }
    }

    @Test("AUTH PLAIN with the configured username and password; a wrong password is 2301")
    func authPlain() async throws {
        try await FakeSMTPServer.with(credentials: ("mailer", "s3cret pass")) { smtp async throws in
            try await Stack.run(services: [Self.auth(smtp, ["AUTH_SMTP_USERNAME": "mailer", "AUTH_SMTP_PASSWORD": "s3cret pass"])]) { s async throws in
                let email = SmoothAuth.email()
                #expect(try await Self.sendMail(s, email).outcome == "200 1000")
                #expect(try await smtp.message(to: email).code != nil)
                #expect(smtp.logins == ["mailer:s3cret pass"])
            }
            try await Stack.run(services: [Self.auth(smtp, ["AUTH_SMTP_USERNAME": "mailer", "AUTH_SMTP_PASSWORD": "wrong"])]) { s async throws in
                #expect(try await Self.sendMail(s, SmoothAuth.email()).outcome == "400 2301")
            }
        }
    }

    @Test("a relay that never answers: 2301 after auth.smtp.timeout-seconds, not a hung request")
    func silentRelay() async throws {
        try await FakeSMTPServer.with(behaviour: .silent) { smtp async throws in
            try await Stack.run(services: [Self.auth(smtp, ["AUTH_SMTP_TIMEOUT_SECONDS": "1"])]) { s async throws in
                let started = ContinuousClock.now
                #expect(try await Self.sendMail(s, SmoothAuth.email()).outcome == "400 2301")
                #expect(ContinuousClock.now - started < .seconds(10))
                // One attempt, not retried: auth closed it before answering; once the server has
                // seen that close (and a while after), it is the only one.
                try await withTimeout(.seconds(10), "the SMTP connection closed") {
                    while smtp.closedWaitingForGreeting == 0 { try await Task.sleep(for: .milliseconds(20)) }
                }
                try await Task.sleep(for: .milliseconds(500))
                #expect(smtp.closedWaitingForGreeting == 1)
            }
        }
    }

    @Test("guessing: wrong codes by value alone are limited per client address (429 1429); by address, five wrong codes void it")
    func guessing() async throws {
        try await FakeSMTPServer.with { smtp async throws in
            try await Stack.run(services: [Self.auth(smtp)]) { s async throws in
                // By address: a wrong code counts against that address's code.
                let first = SmoothAuth.email()
                #expect(try await Self.sendMail(s, first).outcome == "200 1000")
                let code = try #require(try await smtp.message(to: first).code)
                let wrong = code == "999999" ? "999998" : "999999"
                for _ in 0..<5 { #expect(try await Self.check(s, wrong, email: first).outcome == "400 2180") }
                #expect(try await Self.check(s, code, email: first).outcome == "400 2180", "void after five wrong codes")
                #expect(try await Self.check(s, code).outcome == "400 2180")

                // By value alone (Smooth's app): ten wrong codes from one address, then 429 for a while.
                let second = SmoothAuth.email()
                #expect(try await Self.sendMail(s, second).outcome == "200 1000")
                let secondCode = try #require(try await smtp.message(to: second).code)
                let other = secondCode == "123456" ? "654321" : "123456"
                // One failure so far (the voided code above), eight more: nine in the window.
                for _ in 0..<8 { #expect(try await Self.check(s, other).outcome == "400 2180") }
                #expect(try await Self.check(s, secondCode).outcome == "200 1000", "the right code within the limit")
                #expect(try await Self.check(s, other).outcome == "400 2180")
                let refused = try await Self.check(s, other)
                #expect(refused.outcome == "429 1429", "\(refused.status) \(refused.body)")
                #expect(refused.response.headers[.retryAfter].flatMap(Int.init).map { $0 > 0 } == true)
            }
        }
    }
}
