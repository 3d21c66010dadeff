import Foundation
import ServiceKit

/// Input rules for accounts. Every violation is E11 (the contract's "bad request").
enum Validation {
    static func email(_ raw: String?) throws -> String {
        guard let email = raw?.trimmingCharacters(in: .whitespacesAndNewlines), isValidEmail(email) else {
            throw APIError.badRequest("invalid email")
        }
        return email
    }

    static func isValidEmail(_ email: String) -> Bool {
        guard email.count <= 254, !email.contains(where: { $0.isWhitespace }) else { return false }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64 else { return false }
        let domain = parts[1]
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }
            && labels.last.map { $0.count >= 2 } == true
    }

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
