/// One side's `heart-beat` header: `<send>,<receive>` in milliseconds.
///
/// For a client header this is `(cx, cy)`, for the server's `(sx, sy)`:
/// `sendInterval` is the smallest interval at which that side *can* send
/// heart-beats (0 = cannot), `receiveInterval` the interval at which it
/// *wants* to receive them (0 = does not want any).
struct StompHeartBeat: Sendable, Equatable {
    var sendInterval: Int
    var receiveInterval: Int

    /// `0,0`: no heart-beating. Also the meaning of an absent header.
    static let none = StompHeartBeat(sendInterval: 0, receiveInterval: 0)

    /// Largest accepted value (≈ 24.8 days); anything bigger is malformed.
    static let maxInterval = Int(Int32.max)

    init(sendInterval: Int, receiveInterval: Int) {
        self.sendInterval = sendInterval
        self.receiveInterval = receiveInterval
    }

    /// Parses a `heart-beat` header value; `nil` (header absent) means `0,0`.
    ///
    /// Accepts two non-negative decimal integers separated by one comma;
    /// spaces around each number are tolerated.
    /// - Throws: ``StompParseError/invalidHeartBeat(_:)`` for anything else.
    init(headerValue: String?) throws(StompParseError) {
        guard let headerValue else {
            self = .none
            return
        }
        let parts = headerValue.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard parts.count == 2,
            let send = Self.parseInterval(parts[0]),
            let receive = Self.parseInterval(parts[1])
        else { throw .invalidHeartBeat(headerValue) }
        self.init(sendInterval: send, receiveInterval: receive)
    }

    /// The wire form, e.g. `"10000,10000"`.
    var headerValue: String { "\(sendInterval),\(receiveInterval)" }

    /// Negotiates heart-beating per STOMP 1.2 §"Heart-beating".
    ///
    /// - The server sends every `max(sx, cy)` ms, unless `sx` or `cy` is 0.
    /// - The client is expected to send every `max(cx, sy)` ms, unless `cx` or `sy` is 0.
    ///
    /// Apply some tolerance (e.g. ×2) before timing a client out.
    static func negotiate(client: StompHeartBeat, server: StompHeartBeat) -> StompHeartBeatSchedule {
        StompHeartBeatSchedule(
            serverSendEvery: interval(server.sendInterval, client.receiveInterval),
            clientExpectedEvery: interval(client.sendInterval, server.receiveInterval)
        )
    }

    private static func interval(_ canSend: Int, _ wantsToReceive: Int) -> Int? {
        canSend > 0 && wantsToReceive > 0 ? max(canSend, wantsToReceive) : nil
    }

    private static func parseInterval(_ raw: Substring.UTF8View) -> Int? {
        let space = UInt8(ascii: " ")
        var digits = raw.drop { $0 == space }
        while digits.last == space { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 10 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value <= maxInterval ? value : nil
    }
}

/// Outcome of ``StompHeartBeat/negotiate(client:server:)``; `nil` means "none".
struct StompHeartBeatSchedule: Sendable, Equatable {
    /// How often (ms) the server must send something (a frame or an EOL).
    var serverSendEvery: Int?
    /// How often (ms) the server should expect to receive something from the client.
    var clientExpectedEvery: Int?
}
