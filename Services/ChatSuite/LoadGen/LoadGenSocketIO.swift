import Foundation
import HummingbirdWSClient
import NIOCore

/// The Socket.IO client side (Engine.IO v4; docs/realtime.md): `0{open}` (or, for the upgrade
/// of a polling session, `2probe` → `3probe`, then `5`) → `40/ws-channel-<id>,` per channel →
/// `40/ws-channel-<id>,{"sid":…}` each; pings `2` are answered `3`; messages arrive as
/// `42/ws-channel-<id>,["channel",{…}]`.
extension LoadGenSession {
    func runSocketIO() async throws {
        var reader = WebSocketMessageReader(inbound)
        if spec.kind == .socketioUpgrade {
            try await outbound.write(.text("2probe"))
            guard let probe = try await reader.next(), String(buffer: probe) == "3probe" else {
                throw LoadGenProtocolError("socketio-upgrade: the probe was not answered with 3probe")
            }
            try await outbound.write(.text("5"))
        } else {
            guard let open = try await reader.next() else { throw LoadGenProtocolError("socketio: closed before the open packet") }
            guard open.readableBytesView.first == UInt8(ascii: "0") else {
                throw LoadGenProtocolError("socketio: expected the open packet, got \(String(buffer: open).prefix(80))")
            }
        }
        var pending = Set(spec.channels.map { "/ws-channel-\($0.id)" })
        for channel in spec.channels {
            try await outbound.write(.text("40/ws-channel-\(channel.id),"))
        }
        if pending.isEmpty { ready() }
        while let message = try await reader.next() {
            let now = monotonicNanos()
            let bytes = message.readableBytesView
            guard let type = bytes.first else { continue }
            switch type {
            case UInt8(ascii: "2"):  // Engine.IO ping
                try await outbound.write(.text("3"))
            case UInt8(ascii: "4"):  // Engine.IO message: a Socket.IO packet
                let packet = bytes.dropFirst().first
                if packet == UInt8(ascii: "2") {
                    message.withUnsafeReadableBytes { recordMessage($0, at: now) }
                } else if packet == UInt8(ascii: "0") {
                    // `40/ns,{"sid":…}`: the namespace runs to the first comma.
                    let text = String(buffer: message)
                    let namespace = text.dropFirst(2).prefix { $0 != "," }
                    if pending.remove(String(namespace)) != nil, pending.isEmpty { ready() }
                } else if packet == UInt8(ascii: "4") {
                    throw LoadGenProtocolError("socketio: connect refused: \(String(buffer: message).prefix(200))")
                } else if packet == UInt8(ascii: "1") {
                    throw LoadGenProtocolError("socketio: namespace disconnected by the server: \(String(buffer: message).prefix(200))")
                }
            case UInt8(ascii: "1"):  // Engine.IO close
                throw LoadGenProtocolError("socketio: the server closed the session")
            default:
                continue
            }
        }
    }
}
