@testable import GatewayApp

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

extension StompParser {
    /// Pulls results until the parser needs more input.
    mutating func drain() throws(StompParseError) -> [StompParseResult] {
        var results: [StompParseResult] = []
        while let result = try next() {
            results.append(result)
        }
        return results
    }
}

/// Parses one complete input with a fresh (or given) parser.
func parse(_ input: [UInt8], with parser: StompParser = StompParser()) throws(StompParseError) -> [StompParseResult] {
    var parser = parser
    parser.append(input)
    return try parser.drain()
}

func parse(_ text: String, with parser: StompParser = StompParser()) throws(StompParseError) -> [StompParseResult] {
    try parse(bytes(text), with: parser)
}

/// Parses `text`, expecting exactly one frame and nothing else.
func parseSingleFrame(_ text: String, with parser: StompParser = StompParser()) throws -> StompFrame? {
    let results = try parse(text, with: parser)
    guard results.count == 1, case .frame(let frame) = results[0] else { return nil }
    return frame
}

/// Feeds `input` one byte at a time and returns the zero-based index of the
/// byte after which `next()` first threw, together with the error.
func firstFailure(feedingBytesOf input: [UInt8], to parser: StompParser) -> (index: Int, error: StompParseError)? {
    var parser = parser
    for (index, byte) in input.enumerated() {
        parser.append(CollectionOfOne(byte))
        do {
            _ = try parser.drain()
        } catch {
            return (index, error)
        }
    }
    return nil
}
