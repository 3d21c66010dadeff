import ClientContract
import Database
import Foundation
import ServiceKit

/// Smooth's input rules (its server's bean validation): every violation is 2100.
enum SmoothAuthValidation {
    static let signUpPasswordLength = 8...15
    static let nameLength = 2...15
    static let bioLimit = TextLimit("bio", characters: 190)
    static let typeLimit = TextLimit("type", characters: 32)

    static func email(_ raw: String?) throws -> String {
        guard let email = raw?.trimmingCharacters(in: .whitespacesAndNewlines), EmailAddress.isValid(email) else { throw SmoothError.invalidInput }
        return email
    }

    /// 8–15 characters, no control characters (Smooth's sign-up rule; no composition rule).
    static func newPassword(_ raw: String?) throws -> String {
        guard let password = raw, signUpPasswordLength.contains(password.count), Validation.passwordLimit.allows(password),
            !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw SmoothError.invalidInput }
        return password
    }

    /// 2–15 of Hangul syllables, ASCII letters and digits, `_` and `-` (`^[가-힣a-zA-Z0-9_-]+$`).
    static func name(_ raw: String?) throws -> String {
        guard let name = raw, nameLength.contains(name.unicodeScalars.count), name.unicodeScalars.allSatisfy(isNameScalar) else {
            throw SmoothError.invalidInput
        }
        return name
    }

    static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0xAC00...0xD7A3, 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x2D: return true
        default: return false
        }
    }

    /// At most 190 characters; empty clears it.
    static func bio(_ raw: String?) throws -> String? {
        guard let bio = raw, bioLimit.allows(bio) else { throw SmoothError.invalidInput }
        return bio.isEmpty ? nil : bio
    }

    /// Optional, echoed back by sign-in (the app sends "ios").
    static func type(_ raw: String?) throws -> String? {
        guard let type = raw, !type.isEmpty else { return nil }
        guard typeLimit.allows(type), !type.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SmoothError.invalidInput
        }
        return type
    }

    /// A legacy integer id from the query (`?id=`) or path.
    static func alias(_ raw: String?) throws -> Int64 {
        guard let raw, let alias = IntegerAlias.parse(raw) else { throw SmoothError.invalidInput }
        return alias
    }
}
