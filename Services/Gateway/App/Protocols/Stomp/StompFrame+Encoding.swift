extension StompFrame {
    /// Serialises the frame as `COMMAND\nname:value\n...\n\nbody\0`.
    ///
    /// - Headers are escaped per STOMP 1.2 except for CONNECT/CONNECTED
    ///   (see ``StompHeaderEscaping/appendEncoded(_:to:escaping:isName:)``).
    /// - When the body is non-empty and no `content-length` header is set, one is
    ///   appended after the caller's headers, so bodies may contain NUL octets.
    ///   A caller-supplied `content-length` is emitted as-is and must be correct.
    func encoded() -> [UInt8] {
        let escaping = command.escapesHeaders
        var output: [UInt8] = []
        output.reserveCapacity(command.rawValue.utf8.count + 64 * (headers.count + 1) + body.count + 2)
        output.append(contentsOf: command.rawValue.utf8)
        output.append(StompHeaderEscaping.lineFeed)

        for header in headers {
            appendHeader(header.name, header.value, to: &output, escaping: escaping)
        }
        if !body.isEmpty, !headers.contains(StompHeaderName.contentLength) {
            appendHeader(StompHeaderName.contentLength, String(body.count), to: &output, escaping: escaping)
        }

        output.append(StompHeaderEscaping.lineFeed)
        output.append(contentsOf: body)
        output.append(StompHeaderEscaping.null)
        return output
    }

    /// The encoded frame as a `String`, for sending as a WebSocket *text* message.
    ///
    /// Returns `nil` when the body is not valid UTF-8 (text messages must be UTF-8;
    /// send ``encoded()`` as a binary message instead).
    func encodedString() -> String? {
        String(validating: encoded(), as: UTF8.self)
    }

    private func appendHeader(_ name: String, _ value: String, to output: inout [UInt8], escaping: Bool) {
        StompHeaderEscaping.appendEncoded(name, to: &output, escaping: escaping, isName: true)
        output.append(StompHeaderEscaping.colon)
        StompHeaderEscaping.appendEncoded(value, to: &output, escaping: escaping, isName: false)
        output.append(StompHeaderEscaping.lineFeed)
    }
}
