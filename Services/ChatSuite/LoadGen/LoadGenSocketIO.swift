import NIOCore

/// The Socket.IO client side (Engine.IO v4; docs/realtime.md): `0{open}` (or, for the upgrade
/// of a polling session, `2probe` → `3probe`, then `5`) → `40/ws-channel-<id>,` per channel →
/// `40/ws-channel-<id>,{"sid":…}` each; pings `2` are answered `3`; messages arrive as
/// `42/ws-channel-<id>,["channel",{…}]`.
extension LoadGenConversation {
    private enum SocketIOStage {
        static let awaitingOpen = 0
        static let awaitingProbe = 1
        static let open = 2
    }

    func socketIOOpened() -> [Action] {
        guard spec.kind == .socketioUpgrade else {
            stage = SocketIOStage.awaitingOpen
            return []
        }
        stage = SocketIOStage.awaitingProbe
        return [.send("2probe")]
    }

    func socketIOReceived(_ message: ByteBuffer, at now: UInt64) throws -> [Action] {
        let bytes = message.readableBytesView
        switch stage {
        case SocketIOStage.awaitingProbe:
            guard String(buffer: message) == "3probe" else {
                throw LoadGenProtocolError("socketio-upgrade: the probe was not answered with 3probe")
            }
            return [.send("5")] + connectNamespaces()
        case SocketIOStage.awaitingOpen:
            guard bytes.first == UInt8(ascii: "0") else {
                throw LoadGenProtocolError("socketio: expected the open packet, got \(String(buffer: message).prefix(80))")
            }
            return connectNamespaces()
        default:
            break
        }
        guard let type = bytes.first else { return [] }
        switch type {
        case UInt8(ascii: "2"):  // Engine.IO ping
            return [.send("3")]
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
            return []
        case UInt8(ascii: "1"):  // Engine.IO close
            throw LoadGenProtocolError("socketio: the server closed the session")
        default:
            return []
        }
    }

    private func connectNamespaces() -> [Action] {
        stage = SocketIOStage.open
        pending = Set(spec.channels.map { "/ws-channel-\($0.id)" })
        if pending.isEmpty { ready() }
        return spec.channels.map { .send("40/ws-channel-\($0.id),") }
    }
}
