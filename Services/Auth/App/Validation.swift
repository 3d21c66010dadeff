import Foundation
import ServiceKit

/// Input rules for accounts. Every violation is E11 (the contract's "bad request").
enum Validation {
    static func email(_ raw: String?) throws -> String { try EmailAddress.validated(raw) }

    static func isValidEmail(_ email: String) -> Bool { EmailAddress.isValid(email) }

    /// 8–64 characters, at least one letter and one digit, no control characters.
    static func password(_ raw: String?) throws -> String {
        guard let password = raw, (8...64).contains(password.count),
              password.contains(where: \.isLetter), password.contains(where: \.isNumber),
              !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw APIError.badRequest("password must be 8–64 characters with a letter and a digit") }
        return password
    }

    /// 1–30 characters after trimming, no control characters.
    static func nickname(_ raw: String?) throws -> String {
        guard let nickname = raw?.trimmingCharacters(in: .whitespacesAndNewlines), (1...30).contains(nickname.count),
              !nickname.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw APIError.badRequest("nickname must be 1–30 characters") }
        return nickname
    }

    /// Optional; digits with optional `+`, `-` and spaces, 7–20 characters. Empty means none.
    static func phone(_ raw: String?) throws -> String? {
        guard let phone = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !phone.isEmpty else { return nil }
        let allowed = phone.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-" || $0 == "+" || $0 == " ") }
        guard allowed, (7...20).contains(phone.count), phone.contains(where: \.isNumber) else {
            throw APIError.badRequest("invalid phone number")
        }
        return phone
    }

    static func deviceToken(_ raw: String?) throws -> String? {
        guard let token = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else { return nil }
        guard token.count <= 4096 else { throw APIError.badRequest("device token too long") }
        return token
    }
}
