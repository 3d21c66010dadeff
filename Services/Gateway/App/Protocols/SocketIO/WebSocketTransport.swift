import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket

/// Engine.IO over WebSocket (hummingbird-websocket): a WebSocket-only session (no `sid`: the
/// open packet is the first message) or the upgrade of a polling session (`sid`: `2probe` →
/// `3probe`, the pending poll returns a noop, then `5` switches the session to the WebSocket).
/// Requests this transport does not take fall through to the polling routes, which answer them
/// with an Engine.IO error. Routed by the gateway's upgrade router at `/socket.io`.
struct WebSocketTransport: Sendable {
    let server: SocketIOServer
    let trustedProxies: TrustedProxies

    /// What the handshake decided.
    private enum Decision: Sendable {
        /// A new WebSocket-only session.
        case open(EngineIOVersion, identity: SocketIOIdentity, clientAddress: String)
        /// The upgrade of a polling session.
        case upgrade(EngineSession)
    }

    func addUpgrades(to router: RealtimeUpgradeRouter) {
        router.ws("/socket.io") { request, context in
            await shouldUpgrade(request, context)
        } onUpgrade: { inbound, outbound, context in
            switch context.requestContext.decision.get(Decision.self) {
            case .upgrade(let session):
                session.attach(abort: context.requestContext.abort)
                await upgrade(session, inbound: inbound, outbound: outbound, writer: writer(context.requestContext.channel, outbound))
            case .open(let version, let identity, let clientAddress):
                let (session, packets) = server.open(version: version, transport: .websocket, identity: identity, clientAddress: clientAddress)
                session.attach(abort: context.requestContext.abort)
                var frames = inbound.makeAsyncIterator()
                await serve(session, frames: &frames, writer: writer(context.requestContext.channel, outbound), first: packets)
            case nil:
                return
            }
        }
    }

    private func shouldUpgrade(_ request: Request, _ context: RealtimeUpgradeContext) async -> RouterShouldUpgrade {
        let query = request.uri.queryParameters
        guard query["transport"] == "websocket", let version = EngineIOVersion(query: query["EIO"].map(String.init)) else { return .dontUpgrade }
        if let sid = query["sid"] {
            guard let session = server.session(String(sid)), session.version == version, session.transport == .polling else { return .dontUpgrade }
            context.decision.set(Decision.upgrade(session))
            return .upgrade([:])
        }
        // A refused handshake falls through to the polling routes, which answer it with an error.
        let clientAddress = trustedProxies.clientAddress(peer: context.channel.remoteAddress, headers: request.headers)
        guard server.admission.allowHandshake(from: clientAddress) else { return .dontUpgrade }
        guard case .success(let identity) = await server.authenticate(request.headers) else { return .dontUpgrade }
        context.decision.set(Decision.open(version, identity: identity, clientAddress: clientAddress))
        return .upgrade([:])
    }

    private func writer(_ channel: any Channel, _ outbound: WebSocketOutboundWriter) -> ChannelWriter {
        ChannelWriter(channel: channel, batchers: server.hub.writeBatchers, outbound: outbound)
    }

    private func upgrade(_ session: EngineSession, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, writer: ChannelWriter) async {
        var frames = inbound.makeAsyncIterator()
        var reassembly = TextReassembly(maxBytes: server.settings.maxPayloadBytes)
        // An upgrade that does not complete within the ping timeout is dropped: closing the
        // WebSocket ends the reads below.
        let watchdog = Task { [timeout = server.settings.pingTimeout] in
            try await Task.sleep(for: timeout)
            if session.transport != .websocket { try? await outbound.close(.policyViolation, reason: "upgrade timeout") }
        }
        defer { watchdog.cancel() }
        // A failed probe leaves the polling session as it was; the client keeps polling.
        guard await Self.nextText(&frames, &reassembly) == "2probe", !session.isClosed else { return }
        do {
            try await outbound.write(.text("3probe"))
        } catch {
            return
        }
        session.beginUpgrade()
        guard await Self.nextText(&frames, &reassembly) == "5" else {
            server.close(session, reason: "upgrade not completed")
            return
        }
        session.completeUpgrade()
        watchdog.cancel()
        await serve(session, frames: &frames, writer: writer, first: [])
    }

    /// The next whole message of the upgrade's probe, if it is text (nil: anything else ends it).
    private static func nextText(_ frames: inout WebSocketInboundStream.AsyncIterator, _ reassembly: inout TextReassembly) async -> String? {
        while let frame = try? await frames.next() {
            switch reassembly.take(frame) {
            case .text(let text): return text
            case .partial: continue
            case .binary, .tooLarge, .violation: return nil
            }
        }
        return nil
    }

    /// Runs the session on the WebSocket until either side ends it. Packets go straight to the
    /// channel (`ChannelWriter`, no writer task); this task reads the client's packets
    /// (`TextReassembly` joins fragments).
    private func serve(
        _ session: EngineSession, frames: inout WebSocketInboundStream.AsyncIterator, writer: ChannelWriter, first: [String]
    ) async {
        session.attach(writer, first: first.map(OutboundText.init))
        var reassembly = TextReassembly(maxBytes: server.settings.maxPayloadBytes)
        reading: while true {
            guard let frame = try? await frames.next() else { break }
            let text: String
            switch reassembly.take(frame) {
            case .text(let whole): text = whole
            case .partial, .binary: continue  // binary packets are not spoken
            case .tooLarge, .violation: break reading
            }
            // The server's frame limit may be the native protocol's (larger), and
            // hummingbird-websocket checks `maxSize` only across fragments.
            guard text.utf8.count <= server.settings.maxPayloadBytes else { break }
            guard await server.receive(text[...], from: session) else { break }
        }
        server.close(session, reason: "websocket closed")
        // The close frame (1008 for a client that fell too far behind) before the handler
        // returns, or hummingbird-websocket would close with its own code first.
        await session.closingTask?.value
    }
}
