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

    /// `value` as a JSON string literal.
    static func quoted(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
