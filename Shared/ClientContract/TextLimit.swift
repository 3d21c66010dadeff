import ServiceKit

/// How long one client text field may be, in characters and in UTF-8 bytes; both are checked.
///
/// Characters (grapheme clusters) are what a user sees and what the API's documented limits count,
/// but one character can be any number of bytes: a letter followed by 500 000 combining accents is
/// a single character of about 1 MB. Bytes are what the database, the events and the Kafka broker
/// pay for. The suite's rule: a field's byte limit is four times its character limit, so any text
/// of single-scalar characters (every script, every single emoji) within the character limit fits.
public struct TextLimit: Sendable, Equatable, CustomStringConvertible {
    /// The field's name in logs (never sent to the client).
    public let field: String
    public let maxCharacters: Int
    public let maxBytes: Int

    /// A limit of `characters` characters and, unless given, four times as many bytes.
    public init(_ field: String, characters: Int, bytes: Int? = nil) {
        self.field = field
        self.maxCharacters = characters
        self.maxBytes = bytes ?? characters * 4
    }

    /// Whether `text` is within both limits and holds no NUL character (PostgreSQL text cannot
    /// store one). The byte count comes first: it is constant-time for native strings and bounds
    /// the work of counting characters.
    public func allows(_ text: some StringProtocol) -> Bool {
        text.utf8.count <= maxBytes && text.count <= maxCharacters && !text.utf8.contains(0)
    }

    /// `text` unchanged, or E11 (bad request) when it is over either limit or holds a NUL
    /// character (which PostgreSQL text cannot store).
    @discardableResult
    public func check<S: StringProtocol>(_ text: S) throws -> S {
        guard text.utf8.count <= maxBytes else { throw APIError.badRequest("\(field) is over \(maxBytes) bytes") }
        guard text.count <= maxCharacters else { throw APIError.badRequest("\(field) is over \(maxCharacters) characters") }
        guard !text.utf8.contains(0) else { throw APIError.badRequest("\(field) holds a NUL character") }
        return text
    }

    public var description: String { "\(field): \(maxCharacters) characters, \(maxBytes) bytes" }
}

extension TextLimit {
    /// Search keywords (workspace search, message search): 100 characters, 400 bytes.
    public static let searchKeyword = TextLimit("keyword", characters: 100)
}
