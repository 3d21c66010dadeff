import Foundation
import ServiceKit

/// The suite's email syntax rule (shared by sign-up and workspace invitations).
public enum EmailAddress {
    public static let limit = TextLimit("email", characters: 254)

    /// The trimmed address, or E11 when it is not a plausible email address.
    public static func validated(_ raw: String?) throws -> String {
        guard let email = raw?.trimmingCharacters(in: .whitespacesAndNewlines), isValid(email) else {
            throw APIError.badRequest("invalid email")
        }
        return email
    }

    /// local@domain.tld: no whitespace, local part 1–64, domain labels non-empty without edge
    /// dashes, a TLD of 2+ characters, 254 characters (1 016 bytes) at most.
    public static func isValid(_ email: String) -> Bool {
        guard limit.allows(email), !email.contains(where: { $0.isWhitespace }) else { return false }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64 else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }
            && labels.last.map { $0.count >= 2 } == true
    }
}
