import ClientContract
import Foundation
import ServiceKit

/// Input rules for accounts. Every violation is E11 (the contract's "bad request"). Every text is
/// bounded in characters and in UTF-8 bytes (`TextLimit`: four bytes per character).
enum Validation {
    static let passwordLimit = TextLimit("password", characters: 64)
    static let nicknameLimit = TextLimit("nickname", characters: 30)
    static let phoneLimit = TextLimit("phone", characters: 20)
    static let deviceTokenLimit = TextLimit("deviceToken", characters: 4096)

    static func email(_ raw: String?) throws -> String { try EmailAddress.validated(raw) }

    static func isValidEmail(_ email: String) -> Bool { EmailAddress.isValid(email) }

    /// 8–64 characters (at most 256 bytes), at least one letter and one digit, no control characters.
    static func password(_ raw: String?) throws -> String {
        guard let password = raw, passwordLimit.allows(password), password.count >= 8,
            password.contains(where: \.isLetter), password.contains(where: \.isNumber),
            !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw APIError.badRequest("password must be 8–64 characters with a letter and a digit") }
        return password
    }

    /// 1–30 characters (at most 120 bytes) after trimming, no control characters.
    static func nickname(_ raw: String?) throws -> String {
        guard let nickname = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !nickname.isEmpty, nicknameLimit.allows(nickname),
            !nickname.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw APIError.badRequest("nickname must be 1–30 characters") }
        return nickname
    }

    /// Optional; digits with optional `+`, `-` and spaces, 7–20 characters (ASCII, so 7–20 bytes). Empty means none.
    static func phone(_ raw: String?) throws -> String? {
        guard let phone = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !phone.isEmpty else { return nil }
        let allowed = phone.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-" || $0 == "+" || $0 == " ") }
        guard allowed, phoneLimit.allows(phone), phone.count >= 7, phone.contains(where: \.isNumber) else {
            throw APIError.badRequest("invalid phone number")
        }
        return phone
    }

    /// Optional; at most 4 096 characters and 16 384 bytes. Empty means none.
    static func deviceToken(_ raw: String?) throws -> String? {
        guard let token = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else { return nil }
        guard deviceTokenLimit.allows(token) else { throw APIError.badRequest("device token too long") }
        return token
    }
}
