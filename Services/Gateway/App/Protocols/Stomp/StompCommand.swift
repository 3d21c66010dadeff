/// The commands defined by STOMP 1.2.
///
/// Raw values are the exact, case-sensitive wire spelling.
enum StompCommand: String, Sendable, CaseIterable {
    // Client commands.
    case connect = "CONNECT"
    case stomp = "STOMP"
    case send = "SEND"
    case subscribe = "SUBSCRIBE"
    case unsubscribe = "UNSUBSCRIBE"
    case ack = "ACK"
    case nack = "NACK"
    case begin = "BEGIN"
    case commit = "COMMIT"
    case abort = "ABORT"
    case disconnect = "DISCONNECT"

    // Server commands.
    case connected = "CONNECTED"
    case message = "MESSAGE"
    case receipt = "RECEIPT"
    case error = "ERROR"

    /// `true` for commands a client may send to a server.
    var isClientCommand: Bool {
        switch self {
        case .connect, .stomp, .send, .subscribe, .unsubscribe, .ack, .nack, .begin, .commit, .abort,
            .disconnect:
            true
        case .connected, .message, .receipt, .error:
            false
        }
    }

    /// `true` for commands a server may send to a client.
    var isServerCommand: Bool { !isClientCommand }

    /// Whether header names and values of this command use STOMP 1.2 escaping.
    ///
    /// The spec exempts CONNECT and CONNECTED (for backward compatibility with 1.0).
    /// STOMP, the 1.2 alias for CONNECT, is escaped like every other frame.
    var escapesHeaders: Bool {
        self != .connect && self != .connected
    }
}
