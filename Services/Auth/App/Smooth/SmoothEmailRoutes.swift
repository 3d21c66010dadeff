import Foundation
import Hummingbird
import Logging
import ServiceKit

/// `POST /send-mail?email=` and `GET /check-email?key=` (the app verifies an address before it
/// signs up; docs/smooth-api.md says what is checked).
extension SmoothAuthRoutes {
    /// Wrong codes one client address may try per window when it checks by code alone.
    static let maxCodeGuesses = 10
    static let codeGuessWindow: Duration = .seconds(600)

    static let mailNotConfigured = SmoothError(SmoothError.serverError.code, "메일 서버가 설정되지 않아 인증 메일을 보낼 수 없습니다.")
    static let mailFailed = SmoothError(SmoothError.serverError.code, "인증 메일을 보내지 못했습니다. 잠시 후 다시 시도해주세요.")

    func addEmailRoutes(to group: RouterGroup<SuiteRequestContext>) {
        group.post("send-mail") { request, _ -> SmoothDone in
            try await sendMail(to: try SmoothAuthValidation.email(request.uri.queryParameters.get("email")))
            return SmoothDone()
        }
        group.get("check-email") { request, _ -> SmoothDone in
            let query = request.uri.queryParameters
            guard let key = query.get("key")?.trimmingCharacters(in: .whitespaces), !key.isEmpty else { throw SmoothError.invalidInput }
            if let email = query.get("email"), !email.isEmpty {
                // A client that names the address: wrong codes count against that code.
                let check = try await codes.check(code: key, email: try SmoothAuthValidation.email(email).lowercased())
                guard case .verified = check else { throw SmoothError.invalidEmailCode }
                return SmoothDone()
            }
            // Smooth's app sends the code alone: wrong ones count against the client's address.
            let address = request.headers[Self.forwardedFor] ?? "unknown"
            if let wait = codeGuesses.refusal(address) {
                throw APIError.overloaded(retryAfterSeconds: wait, detail: "too many wrong verification codes from \(address)")
            }
            guard case .verified = try await codes.check(code: key) else {
                codeGuesses.fail(address)
                throw SmoothError.invalidEmailCode
            }
            return SmoothDone()
        }
    }

    /// Sends a new six-digit code to `email`: 2210 when the address is registered, 2301 when no
    /// relay is configured or the relay refused, HTTP 429 (1429, `Retry-After`) within a minute of
    /// the last code. A code that could not be sent is taken back.
    func sendMail(to email: String) async throws {
        if try await account.store.emailExists(email) { throw SmoothError.duplicateEmail }
        guard mailer.settings.isConfigured else { throw Self.mailNotConfigured }
        let code: String
        switch try await codes.issue(for: email.lowercased()) {
        case .issued(let issued): code = issued
        case .tooSoon(let seconds):
            throw APIError.overloaded(retryAfterSeconds: seconds, detail: "a verification code went to this address less than a minute ago")
        }
        let minutes = Int(EmailCodes.lifetime / 60)
        let message = SMTPClient.Message(
            to: email, subject: "[Smooth] 회원가입 인증 코드",
            body: """
                다음 인증 코드를 입력해주세요: \(code)
                이 코드는 \(minutes)분 동안 유효합니다.

                Your Smooth verification code is \(code). It expires in \(minutes) minutes.
                """)
        do {
            try await mailer.send(message)
        } catch {
            await codes.withdraw(code, for: email.lowercased())
            logger.error("verification email not sent", metadata: ["error": "\(error)", "smtp.host": "\(mailer.settings.host)"])
            throw Self.mailFailed
        }
    }
}
