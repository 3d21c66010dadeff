import AccessTokens
import ChatInternalAPI
import Events
import Foundation
import Logging
import ServiceKit
import Synchronization

/// The Socket.IO server behind both transports: Engine.IO sessions (open, heartbeat, close), the
/// Socket.IO packets clients send, and namespace joins. Transports hand it text packets and take
/// queued packets from the session.
final class SocketIOServer: Sendable {
    let settings: SocketIOSettings
    let registry: SocketIORegistry
    let admission: RealtimeAdmission
    private let events: GatewayEventPublisher
    private let verifier: AccessTokenVerifier
    private let access: ConversationAccess
    private let logger: Logger
    private let sessions = Mutex<[String: EngineSession]>([:])

    init(
        settings: SocketIOSettings, admission: RealtimeAdmission, events: GatewayEventPublisher, interest: GatewayInterest,
        verifier: AccessTokenVerifier, access: ConversationAccess, logger: Logger
    ) {
        self.settings = settings
        self.admission = admission
        self.events = events
        self.verifier = verifier
        self.access = access
        self.logger = logger
        registry = SocketIORegistry(interest: interest)
    }

    func session(_ id: String) -> EngineSession? {
        sessions.withLock { $0[id] }
    }

    var allSessions: [EngineSession] { sessions.withLock { Array($0.values) } }

    // MARK: lifecycle

    /// The user of an `Authorization` header on the handshake: nil without one, `.failure` for a
    /// token that does not verify (the handshake is refused).
    func authenticate(authorization: String?) async -> Result<String?, EngineIOError> {
        guard let authorization, !authorization.trimmingCharacters(in: .whitespaces).isEmpty else { return .success(nil) }
        guard let token = bareToken(fromAuthorizationHeader: authorization), let claims = try? await verifier.verify(token) else {
            return .failure(.forbidden)
        }
        return .success(claims.userId)
    }

    /// Opens a session and returns it with the packets that start it: the open packet and, for
    /// Engine.IO v3 (Socket.IO 2), the implicit connection of the default namespace.
    func open(version: EngineIOVersion, transport: EngineSession.Transport, userId: String?, clientAddress: String) -> (EngineSession, [String]) {
        let session = EngineSession(
            id: Self.randomId(), version: version, transport: transport, userId: userId, clientAddress: clientAddress,
            maxQueuedPackets: settings.maxQueuedPackets, maxQueuedBytes: settings.maxQueuedBytes
        )
        sessions.withLock { $0[session.id] = session }
        events.publish(
            GatewayEvents.SessionOpened(
                sessionId: session.id, gatewayId: settings.gatewayId, userId: userId.flatMap(UserID.init), clientProtocol: .socketIO, openedAt: Date(),
                gatewayInstance: events.instanceId
            ))
        let upgrades = transport == .polling ? #"["websocket"]"# : "[]"
        var open = #"{"sid":"\#(session.id)","upgrades":\#(upgrades),"pingInterval":\#(settings.pingIntervalMilliseconds),"#
        open += #""pingTimeout":\#(settings.pingTimeoutMilliseconds)"#
        if version == .v4 { open += #","maxPayload":\#(settings.maxPayloadBytes)"# }
        open += "}"
        var packets = [EngineIOPacket.encode(.open, open)]
        if version == .v3, session.connectDefaultNamespace() {
            packets.append(SocketIOEncoder.connected("/", socketId: session.id, version: .v3))
        }
        return (session, packets)
    }

    /// Ends a session (once): leaves its namespaces, forgets it, announces the close.
    func close(_ session: EngineSession, reason: String) {
        guard session.markClosed() else { return }
        sessions.withLock { _ = $0.removeValue(forKey: session.id) }
        for namespace in session.takeNamespaces() {
            registry.unsubscribe(namespace, session)
        }
        if session.isTooSlow {
            session.abortIfWriting()
            // Operators want to see these: a client dropped for not reading (or a bound set too low).
            logger.warning("socket.io client dropped: too far behind", metadata: ["socketio.session": "\(session.id)", "socketio.reason": "\(reason)"])
        } else {
            logger.debug("socket.io session closed", metadata: ["socketio.session": "\(session.id)", "socketio.reason": "\(reason)"])
        }
        events.publishFinal(
            GatewayEvents.SessionClosed(
                sessionId: session.id, gatewayId: settings.gatewayId, userId: session.userId.flatMap(UserID.init), closedAt: Date()
            ))
    }

    // MARK: inbound packets

    /// Handles one Engine.IO packet from the client; false when the session ended (the client
    /// closed it, or broke the protocol).
    func receive(_ text: Substring, from session: EngineSession) async -> Bool {
        session.touch()
        guard let packet = EngineIOPacket(text) else {
            close(session, reason: "malformed engine.io packet")
            return false
        }
        switch packet.type {
        case .close:
            close(session, reason: "client closed")
            return false
        case .ping:
            // v3 clients ping and the server answers; a v4 client pinging is answered the same.
            return session.send(EngineIOPacket.encode(.pong, String(packet.data))) || fail(session, "send queue full")
        case .pong, .noop, .upgrade:
            return true
        case .message:
            return await receiveSocketIO(packet.data, from: session)
        case .open:
            close(session, reason: "client sent open")
            return false
        }
    }

    private func fail(_ session: EngineSession, _ reason: String) -> Bool {
        close(session, reason: reason)
        return false
    }

    private func receiveSocketIO(_ text: Substring, from session: EngineSession) async -> Bool {
        guard let packet = SocketIOPacket(text) else { return fail(session, "malformed socket.io packet") }
        switch packet.type {
        case .connect:
            return await connect(packet, session)
        case .disconnect:
            if let namespace = ConversationNamespace(packet.namespace), session.disconnect(namespace) {
                registry.unsubscribe(namespace, session)
            }
            return true
        case .event:
            // The study app announces its user on the default namespace; its `chat` events are
            // produced by no service yet (docs/realtime.md).
            if packet.namespace == "/", let uid = packet.stringArgument(ofEvent: "changesocketid"), uid.utf8.count <= 128 {
                session.announce(userId: uid)
            }
            return true
        case .ack, .connectError, .binaryEvent, .binaryAck:
            return true  // clients never need these from the gateway's point of view
        }
    }

    private func connect(_ packet: SocketIOPacket, _ session: EngineSession) async -> Bool {
        let version = session.version
        if packet.namespace == "/" {
            // v3 clients are connected implicitly at the handshake; answer only a first connect.
            if session.connectDefaultNamespace() || version == .v4 {
                return session.send(SocketIOEncoder.connected("/", socketId: Self.randomId(), version: version)) || fail(session, "send queue full")
            }
            return true
        }
        // Ids as the REST answers print them (lowercase): clients match the namespace string exactly.
        guard let namespace = ConversationNamespace(packet.namespace), namespace.name == packet.namespace else {
            return refuse(packet.namespace, "Invalid namespace", session)
        }
        // Each first join holds interest (a Kafka record) and may ask chat: bounded per session
        // and per address before anything else happens.
        guard session.namespaceCount < admission.maxNamespacesPerSession else { return refuse(packet.namespace, "Too many namespaces", session) }
        guard admission.allowJoin(from: session.clientAddress) else { return refuse(packet.namespace, "Too many requests", session) }
        // Credentials are optional (the existing clients send none); presented ones must verify
        // and their user must be able to read the conversation.
        var user = session.userId
        if let token = packet.connectToken {
            guard let claims = try? await verifier.verify(token) else { return refuse(packet.namespace, "Not authorized", session) }
            user = claims.userId
        }
        var joined = EngineSession.Joined(namespace: namespace, userId: user)
        if let user {
            guard let readable = await access.mayRead(user: user, conversation: namespace.conversationId) else {
                return refuse(packet.namespace, "Not authorized", session)
            }
            joined.workspaceId = readable.workspaceId
        } else if !settings.anonymous {
            return refuse(packet.namespace, "Not authorized", session)
        }
        if session.connect(joined) {
            registry.subscribe(namespace, session)
        }
        return session.send(SocketIOEncoder.connected(namespace.name, socketId: Self.randomId(), version: version)) || fail(session, "send queue full")
    }

    // MARK: membership changes

    /// Someone may no longer read conversations (they left a channel or a workspace, or it was
    /// deleted): the namespaces that `user` joined with credentials (everyone's, anonymous joins
    /// included, when nil) for those conversations — and its DM rooms in `workspace` — end with a
    /// Socket.IO disconnect packet. Anonymous joins carry no user, so only deletions reach them.
    func revoke(user: UserID?, conversations: [UUID], roomsIn workspace: UUID?) {
        var candidates: [String: EngineSession] = [:]
        for conversation in conversations {
            for session in registry.recipients(in: .channel(conversation)) + registry.recipients(in: .dm(conversation)) {
                candidates[session.id] = session
            }
        }
        if workspace != nil {
            for session in allSessions { candidates[session.id] = session }
        }
        let ids = Set(conversations)
        for session in candidates.values {
            for namespace in session.revoke(user: user?.description, conversations: ids, roomsIn: workspace) {
                registry.unsubscribe(namespace, session)
                if !session.send(SocketIOEncoder.disconnect(namespace.name)) { close(session, reason: "send queue full") }
            }
        }
    }

    private func refuse(_ namespace: String, _ message: String, _ session: EngineSession) -> Bool {
        session.send(SocketIOEncoder.connectError(namespace, message: message, version: session.version)) || fail(session, "send queue full")
    }

    // MARK: ids

    /// 20 URL-safe characters (120 random bits), like the reference server's ids.
    static func randomId() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var bytes = [UInt8](repeating: 0, count: 20)
        for i in bytes.indices { bytes[i] = alphabet[Int(generator.next() % 64)] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
