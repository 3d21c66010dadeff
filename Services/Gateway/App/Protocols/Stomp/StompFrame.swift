/// A single STOMP 1.2 frame: a command, an ordered header list and a raw body.
///
/// Header names/values are stored *unescaped*; escaping happens in ``encoded()``
/// and unescaping in ``StompParser``.
struct StompFrame: Sendable, Equatable {
    var command: StompCommand
    var headers: StompHeaders
    var body: [UInt8]

    init(command: StompCommand, headers: StompHeaders = StompHeaders(), body: [UInt8] = []) {
        self.command = command
        self.headers = headers
        self.body = body
    }

    /// Creates a frame whose body is the UTF-8 encoding of `body`.
    init(command: StompCommand, headers: StompHeaders = StompHeaders(), body: String) {
        self.init(command: command, headers: headers, body: Array(body.utf8))
    }

    /// The body decoded as UTF-8, or `nil` when it is not valid UTF-8.
    var bodyString: String? {
        String(validating: body, as: UTF8.self)
    }
}

/// Well-known STOMP header names.
enum StompHeaderName {
    static let acceptVersion = "accept-version"
    static let ack = "ack"
    static let contentLength = "content-length"
    static let contentType = "content-type"
    static let destination = "destination"
    static let heartBeat = "heart-beat"
    static let host = "host"
    static let id = "id"
    static let login = "login"
    static let message = "message"
    static let messageId = "message-id"
    static let passcode = "passcode"
    static let receipt = "receipt"
    static let receiptId = "receipt-id"
    static let server = "server"
    static let session = "session"
    static let subscription = "subscription"
    static let transaction = "transaction"
    static let version = "version"
}
