/// A fatal STOMP protocol error found while decoding.
///
/// ``message`` is short, human-readable and safe to put in an ERROR frame's
/// `message` header (client-supplied fragments are truncated). After any of
/// these errors the server should send that ERROR frame and close the connection.
enum StompParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The frame (command line through the terminating NUL) exceeds the limit.
    case frameTooLarge(limit: Int)
    /// The command line exceeds the limit.
    case commandTooLong(limit: Int)
    /// A header line exceeds the limit.
    case headerLineTooLong(limit: Int)
    /// The frame has more headers than allowed.
    case tooManyHeaders(limit: Int)
    /// The command line is not a STOMP 1.2 command.
    case unknownCommand(String)
    /// A header line has no `:` separator.
    case missingColon
    /// A header line starts with `:`.
    case emptyHeaderName
    /// An undefined escape sequence such as `\t`, or a trailing lone backslash.
    case invalidEscape(String)
    /// A header name or value is not valid UTF-8.
    case invalidUTF8
    /// A NUL octet appeared in the command or header section.
    case unexpectedNull
    /// `content-length` is not a non-negative decimal integer.
    case invalidContentLength(String)
    /// The octet after `content-length` body bytes is not NUL.
    case missingNullTerminator
    /// A `heart-beat` header is not `<cx>,<cy>` with non-negative integers.
    case invalidHeartBeat(String)

    /// Text for the ERROR frame's `message` header, e.g. `"frame larger than 65536 bytes"`.
    var message: String {
        switch self {
        case .frameTooLarge(let limit): "frame larger than \(limit) bytes"
        case .commandTooLong(let limit): "command line longer than \(limit) bytes"
        case .headerLineTooLong(let limit): "header line longer than \(limit) bytes"
        case .tooManyHeaders(let limit): "more than \(limit) headers"
        case .unknownCommand(let command): "unknown command '\(Self.excerpt(command))'"
        case .missingColon: "header line without ':'"
        case .emptyHeaderName: "empty header name"
        case .invalidEscape(let sequence): "undefined escape sequence '\(Self.excerpt(sequence))' in header"
        case .invalidUTF8: "header is not valid UTF-8"
        case .unexpectedNull: "unexpected NUL octet in frame headers"
        case .invalidContentLength(let value): "invalid content-length '\(Self.excerpt(value))'"
        case .missingNullTerminator: "frame body not terminated by NUL after content-length octets"
        case .invalidHeartBeat(let value): "invalid heart-beat '\(Self.excerpt(value))'"
        }
    }

    var description: String { message }

    /// Caps client-supplied text so an error message stays short.
    private static func excerpt(_ text: String, maxCharacters: Int = 32) -> String {
        text.count <= maxCharacters ? text : String(text.prefix(maxCharacters)) + "..."
    }
}
