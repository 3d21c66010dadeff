import Foundation
import HummingbirdWSClient
import NIOCore

/// The STOMP client side (docs/stomp.md): CONNECT {access-token} → CONNECTED; SUBSCRIBE
/// `/topic/group/<id>` per channel, each with a receipt → RECEIPT each; then MESSAGE frames whose
/// bodies carry the text in `message`. No heart-beats are asked for (`heart-beat:0,0`).
extension LoadGenSession {
    func runStomp() async throws {
        var reader = WebSocketMessageReader(inbound)
        try await outbound.write(.text("CONNECT\naccept-version:1.2\nhost:chatsuite\naccess-token:\(spec.token)\nheart-beat:0,0\n\n\0"))
        guard let connected = try await reader.next() else { throw LoadGenProtocolError("stomp: closed before CONNECTED") }
        guard String(buffer: connected).hasPrefix("CONNECTED\n") else {
            throw LoadGenProtocolError("stomp: expected CONNECTED, got \(String(buffer: connected).prefix(200))")
        }
        var pending = Set<String>()
        for channel in spec.channels {
            let receipt = "r-\(channel.index)"
            pending.insert(receipt)
            try await outbound.write(.text("SUBSCRIBE\nid:s-\(channel.index)\ndestination:/topic/group/\(channel.id)\nreceipt:\(receipt)\n\n\0"))
        }
        if pending.isEmpty { ready() }
        while let message = try await reader.next() {
            let now = monotonicNanos()
            let bytes = message.readableBytesView
            guard let first = bytes.first else { continue }
            switch first {
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
                continue  // heart-beats
            }
        }
    }
}
