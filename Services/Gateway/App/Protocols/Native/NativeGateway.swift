import AccessTokens
import ChatInternalAPI
import Events
import Foundation
import Logging
import NIOCore
import ServiceKit
import Synchronization

/// The native `/v1/gateway` protocol behind its WebSocket transport (docs/native-gateway.md):
/// sessions, their conversations, identify and resume, live dispatch, typing, and checkpoints.
final class NativeGateway: Sendable {
    let settings: NativeSettings
    let hub: RealtimeHub
    private let checkpoints: SessionCheckpoints
    private let logger: Logger
    private let sessions = Mutex<[String: NativeSession]>([:])
    /// How long a resume waits for the session reader to read what the topic holds.
    static let resumeReadLimit: Duration = .seconds(30)
    private let connections = Mutex<[ObjectIdentifier: LiveConnection]>([:])

    init(settings: NativeSettings, hub: RealtimeHub, checkpoints: SessionCheckpoints, logger: Logger) {
        self.settings = settings
        self.hub = hub
        self.checkpoints = checkpoints
        self.logger = logger
    }

    var gatewayId: String { hub.settings.gatewayId }
    private var events: GatewayEventPublisher { hub.events }

    // MARK: connections

    /// A new WebSocket: registered for heartbeat checks, greeted with hello.
    func open(abort: @escaping @Sendable () -> Void) -> LiveConnection {
        let connection = LiveConnection(maxQueuedFrames: settings.maxQueuedFrames, maxQueuedBytes: settings.maxQueuedBytes, abort: abort)
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
        connection.send(NativeFrames.hello(heartbeatMilliseconds: settings.heartbeatIntervalMilliseconds))
        return connection
    }

    /// The WebSocket ended: its session (if any) detaches and is checkpointed for a resume.
    func closed(_ connection: LiveConnection, session: NativeSession?) {
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
        connection.close(code: NativeClose.unknownError, reason: "closed")
        if let session, session.detach(connection) {
            events.publish(session.checkpoint(gatewayId: gatewayId, attachedAt: nil))
        }
    }

    // MARK: inbound frames

    /// Answers a heartbeat written as the protocol documents it (`NativeFrames.isCanonicalHeartbeat`)
    /// on the socket's event loop, where it arrived: no task, no hop to the global executor and
    /// back (docs/benchmarks.md, part 44). `LiveSocket` asks only when no earlier message of the
    /// connection waits, so replies keep their order. False: the frame goes the usual way
    /// (`receive`), as does a heartbeat over the message budget (which `receive` refuses).
    func answerAtOnce(_ text: String, on connection: LiveConnection) -> Bool {
        guard NativeFrames.isCanonicalHeartbeat(text), connection.takeMessage(perMinute: settings.messageBudgetPerMinute) else { return false }
        acknowledgeHeartbeat(on: connection)
        return true
    }

    private func acknowledgeHeartbeat(on connection: LiveConnection) {
        connection.heartbeat()
        connection.send(NativeFrames.heartbeatAck)
    }

    /// Handles one client frame; returns the connection's session (set by identify or resume).
    func receive(_ text: String, on connection: LiveConnection, session: NativeSession?) async -> NativeSession? {
        guard connection.takeMessage(perMinute: settings.messageBudgetPerMinute) else {
            return refuse(connection, NativeClose.rateLimited, "rate limited: too many messages", session)
        }
        guard let frame = NativeFrames.Inbound(text) else {
            connection.close(code: NativeClose.decodeError, reason: "not a JSON object with an op")
            return session
        }
        switch frame.op {
        case "heartbeat":
            acknowledgeHeartbeat(on: connection)
            return session
        case "identify", "resume":
            guard session == nil, !connection.isIdentified else {
                return refuse(connection, NativeClose.alreadyIdentified, "already identified", session)
            }
            // From here on the identify deadline is met; heartbeats are due (a failure closes anyway).
            connection.markIdentified()
            connection.setBusy(true)
            defer { connection.setBusy(false) }
            return frame.op == "identify" ? await identify(frame, on: connection) : await resume(frame, on: connection)
        case "typing", "subscribe":
            guard let session else { return refuse(connection, NativeClose.notIdentified, "identify first", nil) }
            guard let conversation = frame.string(\.conversation_id).flatMap(UUID.init(uuidString:)) else {
                return refuse(connection, NativeClose.decodeError, "conversation_id must be a UUID", session)
            }
            if frame.op == "typing" {
                typing(in: conversation, by: session)
            } else {
                await subscribe(session, to: conversation, connection: connection)
            }
            return session
        default:
            return refuse(connection, NativeClose.unknownOp, "unknown op", session)
        }
    }

    private func refuse(_ connection: LiveConnection, _ code: UInt16, _ reason: String, _ session: NativeSession?) -> NativeSession? {
        connection.close(code: code, reason: reason)
        return session
    }

    private func user(of frame: NativeFrames.Inbound) async -> UserID? {
        await hub.user(ofToken: frame.string(\.token))
    }

    private func identify(_ frame: NativeFrames.Inbound, on connection: LiveConnection) async -> NativeSession? {
        let device = frame.string(\.device)
        guard (device?.utf8.count ?? 0) <= 128 else { return refuse(connection, NativeClose.decodeError, "device is longer than 128 bytes", nil) }
        guard let user = await user(of: frame) else { return refuse(connection, NativeClose.authenticationFailed, "authentication failed", nil) }
        let snapshot: ReadySnapshot
        do {
            snapshot = try ReadySnapshot(try await hub.access.sessionSnapshot(user: user))
        } catch {
            logger.warning("native identify: chat's session snapshot failed", metadata: ["error": "\(error)"])
            return refuse(connection, NativeClose.unknownError, "try again", nil)
        }
        let session = NativeSession(id: randomSessionId(), userId: user, openedAt: Date(), maxMarks: settings.resumeMarks)
        let now = Timestamp.milliseconds(Date())
        for (conversation, kind, workspace) in snapshot.conversations {
            _ = session.follow(conversation, kind: kind, workspace: workspace, from: now)
        }
        register(session)
        let ready =
            #"{"session_id":"\#(session.id)","user_id":"\#(user)","heartbeat_interval":\#(settings.heartbeatIntervalMilliseconds),"#
            + snapshot.members
        guard session.attachReady(connection, json: ready) else { return refuse(connection, NativeClose.unknownError, "try again", nil) }
        hub.sessionOpened(session.id, user: user, protocol: .native, device: device)
        return session
    }

    private func resume(_ frame: NativeFrames.Inbound, on connection: LiveConnection) async -> NativeSession? {
        guard let sessionId = frame.string(\.session_id), sessionId.utf8.count <= 64 else {
            return refuse(connection, NativeClose.decodeError, "session_id must be a string", nil)
        }
        let seq = frame.seq ?? 0
        guard seq >= 0 else { return refuse(connection, NativeClose.invalidSeq, "invalid seq", nil) }
        guard let user = await user(of: frame) else { return refuse(connection, NativeClose.authenticationFailed, "authentication failed", nil) }
        guard let session = await resumable(sessionId, seq: seq), session.userId == user else {
            return refuse(connection, NativeClose.notResumable, "session not resumable", nil)
        }
        let cursors: [(UUID, Int64)]
        switch session.beginResume(from: seq, on: connection) {
        case .cursors(let found, let replaced):
            replaced?.close(code: NativeClose.notResumable, reason: "the session was resumed on another connection")
            cursors = found
        case .seqAhead: return refuse(connection, NativeClose.invalidSeq, "seq is ahead of the session", nil)
        case .tooOld, .ended: return refuse(connection, NativeClose.notResumable, "session not resumable", nil)
        }
        do {
            guard let replayed = try await hub.access.replay(user: user, cursors: cursors, limit: settings.replayLimit) else {
                return refuse(connection, NativeClose.notResumable, "too far behind: identify anew", session)
            }
            // Access is checked again: the checkpoint may follow conversations the user left
            // while detached (or while no gateway watched): they end here, live and replayed.
            for conversation in replayed.removed where session.kind(of: conversation) != nil { hub.unfollow(session, conversation) }
            if !session.finishResume(replayed: replayed.messages, changes: replayed.changes, removed: replayed.removed) {
                return refuse(connection, NativeClose.notResumable, "too far behind: identify anew", session)
            }
            // Claims the session: the gateway that held it before sees this checkpoint and, when
            // its own copy expires, neither closes nor deletes a session that lives on here.
            events.publish(session.checkpoint(gatewayId: gatewayId, attachedAt: events.instanceId))
        } catch {
            logger.warning("native resume: chat's replay failed", metadata: ["error": "\(error)"])
            return refuse(connection, NativeClose.unknownError, "try again", session)
        }
        return session
    }

    /// A session of this gateway, or one rebuilt from its checkpoint — which may take a moment
    /// to arrive (a restarted gateway reads the session topic from its beginning; another
    /// gateway's checkpoint travels through Kafka): waits until the session reader has read
    /// what the topic held at the request (up to `resumeReadLimit`), then up to 10 s from the
    /// request for a checkpoint that has reached `seq` (an older one, from an earlier detach or
    /// resume, may still be the latest here), then takes the latest there is.
    private func resumable(_ sessionId: String, seq: Int) async -> NativeSession? {
        if let session = sessions.withLock({ $0[sessionId] }) { return session }
        // First the checkpoints the topic holds now (a reader behind under load may take a
        // while), then up to 10 s from the request (at least 2 s more) for one still being
        // written by the gateway the client left: a checkpoint as far as the client's seq.
        let start = ContinuousClock.now
        let read = await checkpoints.readToEnd(before: start + Self.resumeReadLimit)
        let deadline = read ? max(start + .seconds(10), .now + .seconds(2)) : ContinuousClock.now
        while true {
            if let checkpoint = checkpoints.checkpoint(sessionId), checkpoint.seq >= seq || ContinuousClock.now >= deadline {
                let rebuilt = NativeSession(checkpoint: checkpoint, maxMarks: settings.resumeMarks)
                // Two resumes racing for one unknown session: the first registration wins.
                let (session, isNew) = sessions.withLock { sessions -> (NativeSession, Bool) in
                    if let existing = sessions[sessionId] { return (existing, false) }
                    sessions[sessionId] = rebuilt
                    return (rebuilt, true)
                }
                if isNew { follow(session) }
                return session
            }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func register(_ session: NativeSession) {
        sessions.withLock { $0[session.id] = session }
        follow(session)
    }

    /// The hub learns what the session follows.
    private func follow(_ session: NativeSession) {
        for follow in session.follows { hub.follow(session, follow) }
    }

    private func subscribe(_ session: NativeSession, to conversation: UUID, connection: LiveConnection) async {
        // Each one asks chat: a user's subscriptions count against the join limit, as STOMP's do.
        guard hub.admission.allowJoin(from: session.userId.description) else {
            connection.send(NativeFrames.error(code: Int(NativeClose.rateLimited), message: "too many subscriptions; slow down"))
            return
        }
        guard let readable = await hub.access.mayRead(user: session.userId.description, conversation: conversation) else {
            connection.send(NativeFrames.error(code: NativeClose.notMember, message: "not a member of the conversation"))
            return
        }
        let follow = LiveFollow(id: conversation, kind: .init(readable.kind), workspaceId: readable.workspaceId, userId: session.userId)
        if session.follow(conversation, kind: readable.kind, workspace: readable.workspaceId, from: Timestamp.milliseconds(Date())) {
            hub.follow(session, follow)
        }
        await hub.interestConfirmed(for: follow)
        connection.send(NativeFrames.subscribed(conversation))
    }

    private func typing(in conversation: UUID, by session: NativeSession) {
        guard let kind = session.kind(of: conversation), session.mayType(in: conversation, now: .now, interval: hub.settings.typingInterval) else {
            return
        }
        events.publish(GatewayEvents.TypingStarted(conversationId: conversation, kind: kind, userId: session.userId, startedAt: Date()))
    }

    // MARK: housekeeping

    /// Closes connections that never identified or stopped heartbeating, and ends sessions
    /// detached for longer than the resume window (run by a `SweepService` every second).
    func sweep(now: ContinuousClock.Instant) {
        for connection in connections.withLock({ Array($0.values) }) {
            switch connection.health(now: now, interval: settings.heartbeatInterval, writeTimeout: hub.settings.writeTimeout) {
            case .fine: break
            case .stalled: connection.abortConnection()
            case .notIdentified: connection.close(code: NativeClose.notIdentified, reason: "not identified in time")
            case .zombie: connection.close(code: NativeClose.timedOut, reason: "no heartbeat")
            }
        }
        for session in sessions.withLock({ Array($0.values) }) where session.detachedLongerThan(settings.resumeWindow, now: now) {
            end(session)
        }
    }

    private func end(_ session: NativeSession) {
        guard session.end() != nil else { return }
        sessions.withLock { _ = $0.removeValue(forKey: session.id) }
        hub.unfollowAll(session)
        // Resumed on another gateway since: that one owns it now (and its key on the topic).
        if let latest = checkpoints.checkpoint(session.id), latest.gatewayId != gatewayId { return }
        hub.sessionClosed(session.id, user: session.userId)
    }

    /// Shutdown: every attached session is checkpointed (so it resumes on another gateway or
    /// after the restart) and its connection closed with 1001.
    func shutdown() {
        for session in sessions.withLock({ Array($0.values) }) {
            guard let connection = session.connection, session.detach(connection) else { continue }
            events.publish(session.checkpoint(gatewayId: gatewayId, attachedAt: nil))
            connection.close(code: NativeClose.goingAway, reason: "gateway shutting down: resume")
        }
        for connection in connections.withLock({ Array($0.values) }) {
            connection.close(code: NativeClose.goingAway, reason: "gateway shutting down")
        }
    }
}

/// Chat's session snapshot: the conversations to follow, and its members to splice into ready.
struct ReadySnapshot {
    var conversations: [(UUID, ChatEvents.Conversation.Kind, UUID?)] = []
    /// The snapshot object without its opening brace (`"workspaces":[…],…}`).
    var members: String

    init(_ buffer: ByteBuffer) throws {
        let text = String(buffer: buffer)
        guard text.hasPrefix("{") else { throw ChatInternalError(status: 0) }
        let snapshot = try JSONDecoder().decode(ChatInternal.SessionSnapshot.self, from: Data(text.utf8))
        conversations =
            snapshot.channels.map { ($0.channel_id.uuid, .channel, $0.workspace_id.uuid) }
            + snapshot.dms.map { ($0.room_id.uuid, .dm, $0.workspace_id.uuid) }
            + snapshot.rooms.map { ($0.room_id.uuid, .dm, nil) }
        members = String(text.dropFirst())
    }
}
