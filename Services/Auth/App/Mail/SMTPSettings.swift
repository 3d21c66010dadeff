import Foundation
import ServiceKit

/// `auth.smtp.*` (docs/configuration.md): the relay email verification codes go through.
/// Plain SMTP only (no STARTTLS, no implicit TLS): point it at a relay on a trusted network
/// (a local MTA or a sidecar) that forwards with TLS.
struct SMTPSettings: Sendable {
    /// Empty: no relay; sending refuses with a server error, nothing is attempted.
    var host: String
    var port: Int
    /// The envelope sender and `From:` address.
    var from: String
    /// `AUTH PLAIN` credentials; no authentication when the username is empty.
    var username: String
    var password: String
    /// The longest one delivery may take, connection included.
    var timeout: Duration

    var isConfigured: Bool { !host.isEmpty }

    init(host: String, port: Int, from: String, username: String = "", password: String = "", timeout: Duration = .seconds(10)) {
        self.host = host
        self.port = port
        self.from = from
        self.username = username
        self.password = password
        self.timeout = timeout
    }

    init(_ settings: ServiceSettings) throws {
        host = try settings.string("auth.smtp.host").trimmingCharacters(in: .whitespaces)
        port = try settings.int("auth.smtp.port")
        from = try settings.string("auth.smtp.from").trimmingCharacters(in: .whitespaces)
        username = try settings.string("auth.smtp.username")
        // Inline (`AUTH_SMTP_PASSWORD`) or as a file (`AUTH_SMTP_PASSWORD_FILE`); unset is empty.
        password = (try? settings.secretText("auth.smtp.password")) ?? ""
        let seconds = try settings.int("auth.smtp.timeout-seconds")
        timeout = .seconds(seconds)
        guard (1...65535).contains(port) else { throw StartupError("auth.smtp.port must be 1–65535 (got \(port))") }
        guard seconds >= 1 else { throw StartupError("auth.smtp.timeout-seconds must be at least 1 (got \(seconds))") }
        guard !host.contains(where: { $0.isWhitespace || $0 == "/" }) else { throw StartupError("auth.smtp.host must be a host name or address") }
        if isConfigured {
            guard SMTPClient.isSafeAddress(from) else { throw StartupError("auth.smtp.from must be an email address when auth.smtp.host is set") }
            guard username.isEmpty || !password.isEmpty else {
                throw StartupError("auth.smtp.username is set but auth.smtp.password (AUTH_SMTP_PASSWORD or AUTH_SMTP_PASSWORD_FILE) is empty")
            }
        }
        guard !username.contains(where: { $0 == "\0" || $0.isNewline }), !password.contains(where: { $0 == "\0" || $0.isNewline }) else {
            throw StartupError("auth.smtp.username and auth.smtp.password cannot contain NUL or line breaks")
        }
    }
}
