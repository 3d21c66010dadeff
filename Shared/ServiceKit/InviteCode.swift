import Foundation

/// Invitation codes (Discord-style joins): 10 characters from a 62-letter alphabet, ~59.5 bits
/// from the system CSPRNG, so a code cannot be guessed.
public enum InviteCode {
    public static func generate() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<10).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    /// The code in what a client sends: the bare code, or the end of an invitation link.
    public static func parse(_ text: String) -> String? {
        let code = text.split(separator: "/").last.map(String.init) ?? ""
        guard (1...64).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return code
    }
}
