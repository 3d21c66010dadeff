import AccessTokens
import ChatInternalAPI
import Common
import Events
import FirebaseAuth
import Foundation
import HTTPTypes
import Logging
import ServiceKit
import Synchronization

/// The Socket.IO server behind both transports: Engine.IO sessions (open, heartbeat, close), the
/// Socket.IO packets clients send, and namespace joins. Transports hand it text packets and take
/// queued packets from the session.
final class SocketIOServer: Sendable {
    let settings: SocketIOSettings
    let hub: RealtimeHub
    /// Checks the study app's Firebase ID tokens (`idtoken` on the handshake); nil when no
    /// Firebase project is configured.
    private let firebase: FirebaseTokenVerifier?
    private let logger: Logger
    private let sessions = Mutex<[String: EngineSession]>([:])
    /// When each new session's first ping is due: spread, so sessions opened together do not ping together.
    private let pingPhases = HeartbeatPhases()

    init(settings: SocketIOSettings, hub: RealtimeHub, firebase: FirebaseTokenVerifier?, logger: Logger) {
        self.settings = settings
        self.hub = hub
        self.firebase = firebase
        self.logger = logger
    }

    var admission: RealtimeAdmission { hub.admission }

    func session(_ id: String) -> EngineSession? {
        sessions.withLock { $0[id] }
    }

    var allSessions: [EngineSession] { sessions.withLock { Array($0.values) } }

    // MARK: lifecycle

    /// Who a handshake's headers name: the suite user of an `Authorization` header (nil without
    /// one; `.failure` for a token that does not verify: the handshake is refused), and the study
    /// app's user of a verified Firebase `idtoken` (nil without one, or when it does not verify:
    /// the app still works as in the compatibility mode, see `announceStudyUser`).
    func authenticate(_ headers: HTTPFields) async -> Result<SocketIOIdentity, EngineIOError> {
        var identity = SocketIOIdentity()
        if let authorization = headers[.authorization], !authorization.trimmingHTTPWhitespace().isEmpty {
            guard let user = await hub.user(ofToken: authorization) else { return .failure(.forbidden) }
            identity.userId = user.description
        }
        if let firebase, let token = headers[Self.idToken]?.trimmingHTTPWhitespace(), !token.isEmpty {
            identity.studyUid = try? await firebase.verify(token).uid
        }
        return .success(identity)
    }

    static let idToken = HTTPField.Name("idtoken")!

    /// Opens a session and returns it with the packets that start it: the open packet and, for
    /// Engine.IO v3 (Socket.IO 2), the implicit connection of the default namespace.
    func open(version: EngineIOVersion, transport: EngineSession.Transport, identity: SocketIOIdentity, clientAddress: String) -> (
        EngineSession, [String]
    ) {
        let userId = identity.userId
        let session = EngineSession(
            id: randomSessionId(), version: version, transport: transport, userId: userId, studyUid: identity.studyUid,
            clientAddress: clientAddress, maxQueuedPackets: settings.maxQueuedPackets, maxQueuedBytes: settings.maxQueuedBytes,
            firstPingAdvance: pingPhases.nextAdvance(period: settings.pingInterval), server: self
        )
        sessions.withLock { $0[session.id] = session }
        hub.sessionOpened(session.id, user: userId.flatMap(UserID.init), protocol: .socketIO)
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
        hub.unfollowAll(session)
        if session.isTooSlow {
            session.abortIfWriting()
            // Operators want to see these: a client dropped for not reading (or a bound set too low).
            logger.warning("socket.io client dropped: too far behind", metadata: ["socketio.session": "\(session.id)", "socketio.reason": "\(reason)"])
        } else {
            logger.debug("socket.io session closed", metadata: ["socketio.session": "\(session.id)", "socketio.reason": "\(reason)"])
        }
        hub.sessionClosed(session.id, user: session.userId.flatMap(UserID.init))
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
            if let namespace = session.connectedNamespace(named: packet.namespace), session.disconnect(namespace) {
                hub.unfollow(session, namespace.conversationId)
            }
            return true
        case .event:
            if packet.namespace == "/", let uid = packet.stringArgument(ofEvent: "changesocketid") {
                return announceStudyUser(uid, session)
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
                return session.send(SocketIOEncoder.connected("/", socketId: randomSessionId(), version: version)) || fail(session, "send queue full")
            }
            return true
        }
        // Ids as the REST answers print them (lowercase): clients match the namespace string
        // exactly. Gen A (Lilac) names a channel by its integer alias.
        let generationAAlias = ConversationNamespace.generationAAlias(packet.namespace)
        let named = ConversationNamespace(packet.namespace)
        guard generationAAlias != nil || named?.name == packet.namespace else { return refuse(packet.namespace, "Invalid namespace", session) }
        // Each first join holds interest (a Kafka record) and may ask chat: bounded per session
        // and per address before anything else happens.
        guard session.namespaceCount < admission.maxNamespacesPerSession else { return refuse(packet.namespace, "Too many namespaces", session) }
        guard admission.allowJoin(from: session.clientAddress) else { return refuse(packet.namespace, "Too many requests", session) }
        let namespace: ConversationNamespace
        if let named {
            namespace = named
        } else if let generationAAlias, let id = await hub.access.channel(alias: generationAAlias) {
            namespace = .generationAChannel(alias: generationAAlias, id: id)
        } else {
            return refuse(packet.namespace, "Invalid namespace", session)
        }
        // Credentials are optional (the existing clients send none); presented ones must verify
        // and their user must be able to read the conversation.
        var user = session.userId.flatMap(UserID.init)
        if let token = packet.connectToken {
            guard let verified = await hub.user(ofToken: token) else { return refuse(packet.namespace, "Not authorized", session) }
            user = verified
        }
        var follow = LiveFollow(id: namespace.conversationId, kind: namespace.followKind, userId: user, generationAAlias: namespace.generationAAlias)
        if let user {
            guard let readable = await hub.access.mayRead(user: user.description, conversation: namespace.conversationId) else {
                return refuse(packet.namespace, "Not authorized", session)
            }
            follow.workspaceId = readable.workspaceId
        } else if !settings.anonymous {
            return refuse(packet.namespace, "Not authorized", session)
        }
        if session.connect(namespace) {
            hub.follow(session, follow)
        }
        await hub.interestConfirmed(for: follow)
        return session.send(SocketIOEncoder.connected(namespace.name, socketId: randomSessionId(), version: version)) || fail(session, "send queue full")
    }

    /// The study app names its user on the default namespace (`changesocketid` with its Firebase
    /// uid, client contract §3.2): the session follows that user's study chats, which arrive as
    /// `chat` events. A session whose handshake carried a verified Firebase `idtoken` may announce
    /// only that token's uid. The unchanged apps present no credentials, so an unproven
    /// announcement is part of the compatibility mode (`gateway.socketio.anonymous`); without it
    /// the announcement is ignored. A malformed uid is ignored too; a new uid replaces the
    /// previous one.
    private func announceStudyUser(_ uid: String, _ session: EngineSession) -> Bool {
        if let verified = session.studyUid {
            guard uid == verified else { return true }
        } else {
            guard settings.anonymous else { return true }
        }
        guard (1...128).contains(uid.utf8.count),
            !uid.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else { return true }
        // Like a namespace join: it holds interest (a Kafka record), so it is admitted per address.
        guard session.announcedUserId != uid, admission.allowJoin(from: session.clientAddress) else { return true }
        let (replaced, isNew) = session.announce(userId: uid)
        guard isNew else { return true }
        if let replaced { hub.unfollow(session, StudyEvents.liveRoute(of: replaced)) }
        hub.follow(session, LiveFollow(id: StudyEvents.liveRoute(of: uid), kind: .studyUser, userId: nil))
        return true
    }

    private func refuse(_ namespace: String, _ message: String, _ session: EngineSession) -> Bool {
        session.send(SocketIOEncoder.connectError(namespace, message: message, version: session.version)) || fail(session, "send queue full")
    }
}

/// Who a Socket.IO handshake names (each verified, or nil).
struct SocketIOIdentity: Sendable, Equatable {
    /// The suite user of the `Authorization` header.
    var userId: String?
    /// The study app's user of the Firebase `idtoken` header.
    var studyUid: String?
}
