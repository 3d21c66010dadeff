import NIOCore

/// The STOMP client side (docs/stomp.md): CONNECT {access-token} → CONNECTED; SUBSCRIBE
/// `/topic/group/<id>` per channel, each with a receipt → RECEIPT each; then MESSAGE frames whose
/// bodies carry the text in `message`. The client sends an EOL every `stompClientHeartBeat` ms
/// once connected (0: none) and asks for the server's every `stompHeartBeat` ms (`heart-beat:C,N`;
/// 0: none), and ignores them.
extension LoadGenConversation {
    func stompOpened() -> [Action] {
        stage = 0
        return [
            .send(
                "CONNECT\naccept-version:1.2\nhost:chatsuite\naccess-token:\(spec.token)\nheart-beat:\(spec.stompClientHeartBeat),\(spec.stompHeartBeat)\n\n\0")
        ]
    }

    func stompReceived(_ message: ByteBuffer, at now: UInt64) throws -> [Action] {
        if stage == 0 {
            guard String(buffer: message).hasPrefix("CONNECTED\n") else {
                throw LoadGenProtocolError("stomp: expected CONNECTED, got \(String(buffer: message).prefix(200))")
            }
            stage = 1
            pending = Set(spec.channels.map { "r-\($0.index)" })
            if pending.isEmpty { ready() }
            let subscribes: [Action] = spec.channels.map {
                .send("SUBSCRIBE\nid:s-\($0.index)\ndestination:/topic/group/\($0.id)\nreceipt:r-\($0.index)\n\n\0")
            }
            return subscribes + (spec.stompClientHeartBeat > 0 ? [.heartbeat(every: spec.stompClientHeartBeat)] : [])
        }
        switch message.readableBytesView.first {
        case UInt8(ascii: "M"):  // MESSAGE
            message.withUnsafeReadableBytes { recordMessage($0, at: now) }
        case UInt8(ascii: "R"):  // RECEIPT
            let text = String(buffer: message)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("receipt-id:") }),
                pending.remove(String(line.dropFirst("receipt-id:".count))) != nil, pending.isEmpty
            {
                ready()
            }
        case UInt8(ascii: "E"):  // ERROR
            throw LoadGenProtocolError("stomp: ERROR \(String(buffer: message).prefix(200))")
        default:
            break  // heart-beats
        }
        return []
    }
}
