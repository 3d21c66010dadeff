import ClientContract
import Events
import Foundation

/// The little JSON the Socket.IO server reads from clients (event arguments, CONNECT payloads)
/// and quoting for what it writes. Client input is bounded by the Engine.IO payload limit.
enum JSONText {
    /// The leading strings of a JSON array (`["changesocketid","uid"]`); nil unless it is an
    /// array whose first elements are strings.
    static func parseStrings(_ text: Substring) -> [String]? {
        guard let array = parse(text) as? [Any] else { return nil }
        var strings: [String] = []
        for element in array {
            guard let string = element as? String else { break }
            strings.append(string)
        }
        return strings
    }

    /// A string member of a JSON object; nil when absent, not a string, or not an object.
    static func stringMember(_ name: String, in text: Substring) -> String? {
        (parse(text) as? [String: Any])?[name] as? String
    }

    private static func parse(_ text: Substring) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    /// `value` as a JSON string literal (the suite's one escaper, `JSONWriter`).
    static func quoted(_ value: String) -> String { JSONWriter.quoted(value) }
}
