extension StompFrame {
    /// A CONNECTED frame answering a successful CONNECT/STOMP.
    ///
    /// - Parameters:
    ///   - version: The negotiated protocol version (see ``StompVersion/negotiate(acceptVersion:)``).
    ///   - heartBeat: The *server's* own heart-beat capabilities `(sx, sy)`; always emitted.
    ///   - server: Optional `server` header, e.g. `"smooth-gateway/1.0"`.
    ///   - session: Optional `session` header.
    static func connected(
        version: StompVersion = .v1_2,
        heartBeat: StompHeartBeat = .none,
        server: String? = nil,
        session: String? = nil
    ) -> StompFrame {
        var headers = StompHeaders()
        headers.append(StompHeaderName.version, version.rawValue)
        headers.append(StompHeaderName.heartBeat, heartBeat.headerValue)
        if let server { headers.append(StompHeaderName.server, server) }
        if let session { headers.append(StompHeaderName.session, session) }
        return StompFrame(command: .connected, headers: headers)
    }

    /// A MESSAGE frame delivering `body` to a subscription.
    ///
    /// `content-length` is added by ``encoded()`` when the body is non-empty.
    static func message(
        destination: String,
        subscription: String,
        messageId: String,
        ack: String? = nil,
        contentType: String? = nil,
        body: [UInt8] = []
    ) -> StompFrame {
        var headers = StompHeaders()
        headers.append(StompHeaderName.destination, destination)
        headers.append(StompHeaderName.messageId, messageId)
        headers.append(StompHeaderName.subscription, subscription)
        if let ack { headers.append(StompHeaderName.ack, ack) }
        if let contentType { headers.append(StompHeaderName.contentType, contentType) }
        return StompFrame(command: .message, headers: headers, body: body)
    }

    /// A RECEIPT frame acknowledging a client frame that carried `receipt:<id>`.
    static func receipt(id: String) -> StompFrame {
        StompFrame(command: .receipt, headers: [StompHeaderName.receiptId: id])
    }

    /// An ERROR frame. The connection must be closed after sending it.
    ///
    /// - Parameters:
    ///   - message: Short description, e.g. ``StompParseError/message``.
    ///   - receiptId: The `receipt` header of the offending frame, if it had one.
    ///   - body: Optional detail; tagged `text/plain` when non-empty.
    static func error(message: String, receiptId: String? = nil, body: [UInt8] = []) -> StompFrame {
        var headers = StompHeaders()
        headers.append(StompHeaderName.message, message)
        if let receiptId { headers.append(StompHeaderName.receiptId, receiptId) }
        if !body.isEmpty { headers.append(StompHeaderName.contentType, "text/plain") }
        return StompFrame(command: .error, headers: headers, body: body)
    }
}
