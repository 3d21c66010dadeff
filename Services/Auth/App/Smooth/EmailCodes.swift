import Crypto
import Database
import Foundation
import Logging
import PostgresNIO

/// Email verification codes (Smooth's `send-mail` / `check-email`): six digits, one pending code
/// per address, stored only as an HMAC (keyed from the token signing key, so a database dump does
/// not reveal pending codes without it), valid for `lifetime`, one new code per address per
/// `resendInterval`, single use.
struct EmailCodes: Sendable {
    let postgres: PostgresClient
    let logger: Logger
    let key: SymmetricKey

    static let lifetime: TimeInterval = 600
    static let resendInterval: TimeInterval = 60
    /// Wrong codes a check that names the address may try before the code is void.
    static let maxAttempts = 5

    enum Issue: Equatable {
        case issued(code: String)
        /// The last code went out less than `resendInterval` ago; the seconds to wait.
        case tooSoon(retryAfter: Int)
    }

    enum Check: Equatable {
        case verified(email: String)
        case invalid
    }

    /// The key of the code HMACs, derived from a server secret (the token signing key).
    static func key(from secret: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)), salt: Data("chatsuite-auth".utf8),
            info: Data("email verification codes v1".utf8), outputByteCount: 32)
    }

    func hash(_ code: String) -> ByteBuffer {
        ByteBuffer(bytes: Array(HMAC<SHA256>.authenticationCode(for: Data(code.utf8), using: key)))
    }

    static func isWellFormed(_ code: String) -> Bool {
        code.utf8.count == 6 && code.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// A new code for `email` (replacing a previous one), unless one went out less than
    /// `resendInterval` ago. Two pending addresses never share a code (a code alone names its
    /// address), so a drawn code in use elsewhere is drawn again.
    func issue(for email: String) async throws -> Issue {
        _ = try await postgres.liveQuery("DELETE FROM email_codes WHERE expires_at < now() - interval '1 day'", logger: logger)
        for _ in 0..<8 {
            let code = String(format: "%06d", Int.random(in: 0...999_999))
            do {
                var inserted = false
                for try await _ in try await postgres.liveQuery(
                    """
                    INSERT INTO email_codes (email, code_hash, expires_at) VALUES (\(email), \(hash(code)), now() + make_interval(secs => \(Self.lifetime)))
                    ON CONFLICT (email) DO UPDATE SET code_hash = EXCLUDED.code_hash, sent_at = now(), expires_at = EXCLUDED.expires_at,
                        attempts = 0, verified_at = NULL
                    WHERE email_codes.sent_at <= now() - make_interval(secs => \(Self.resendInterval))
                    RETURNING 1
                    """, logger: logger)
                {
                    inserted = true
                }
                if inserted { return .issued(code: code) }
                return .tooSoon(retryAfter: try await secondsUntilResend(email))
            } catch let error where error.isUniqueViolation {
                continue
            }
        }
        throw SMTPError(description: "no free verification code after 8 draws")
    }

    private func secondsUntilResend(_ email: String) async throws -> Int {
        for try await seconds in try await postgres.liveQuery(
            """
            SELECT ceil(extract(epoch FROM sent_at + make_interval(secs => \(Self.resendInterval)) - now()))::bigint FROM email_codes
            WHERE email = \(email)
            """, logger: logger
        ).decode(Int64.self) {
            return max(1, Int(seconds))
        }
        return 1
    }

    /// Takes back a code that could not be sent, so the address may ask again at once.
    func withdraw(_ code: String, for email: String) async {
        do {
            _ = try await postgres.liveQuery("DELETE FROM email_codes WHERE email = \(email) AND code_hash = \(hash(code))", logger: logger)
        } catch {
            logger.warning("could not withdraw an unsent verification code", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Confirms a code by itself (what Smooth's app sends): the pending, unexpired code with
    /// this value, whichever address it went to.
    func check(code: String) async throws -> Check {
        guard Self.isWellFormed(code) else { return .invalid }
        for try await email in try await postgres.liveQuery(
            """
            UPDATE email_codes SET verified_at = now()
            WHERE code_hash = \(hash(code)) AND verified_at IS NULL AND expires_at > now() AND attempts < \(Self.maxAttempts)
            RETURNING email
            """, logger: logger
        ).decode(String.self) {
            return .verified(email: email)
        }
        return .invalid
    }

    /// Confirms the code of one address: a wrong code counts against it, and after
    /// `maxAttempts` wrong ones the code is void (a new one must be sent).
    func check(code: String, email: String) async throws -> Check {
        let hash = hash(code)
        for try await (matched, email) in try await postgres.liveQuery(
            """
            UPDATE email_codes SET
                verified_at = CASE WHEN code_hash = \(hash) THEN now() ELSE verified_at END,
                attempts = attempts + CASE WHEN code_hash = \(hash) THEN 0 ELSE 1 END
            WHERE email = \(email) AND verified_at IS NULL AND expires_at > now() AND attempts < \(Self.maxAttempts)
            RETURNING code_hash = \(hash), email
            """, logger: logger
        ).decode((Bool, String).self) {
            return matched && Self.isWellFormed(code) ? .verified(email: email) : .invalid
        }
        return .invalid
    }

    /// Forgets an address's code (it signed up).
    func clear(_ email: String) async throws {
        _ = try await postgres.liveQuery("DELETE FROM email_codes WHERE email = \(email)", logger: logger)
    }
}
