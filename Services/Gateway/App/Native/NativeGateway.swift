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
    let gatewayId: String
    private let verifier: AccessTokenVerifier
    private let access: ConversationAccess
    private let events: GatewayEventPublisher
    private let interest: GatewayInterest
    private let checkpoints: SessionCheckpoints
    private let logger: Logger
    private let sessions = Mutex<[String: NativeSession]>([:])
    /// Conversation → the sessions following it (by session id).
    private let followers = Mutex<[UUID: [String: NativeSession]]>([:])
    private let connections = Mutex<[ObjectIdentifier: NativeConnection]>([:])
    /// Workspace → the sessions following at least one of its conversations: who gets the
    /// `presence.update` of its members. Interest in a workspace is announced like interest in a
    /// conversation (its id on `gateway.interest.v1`), so chat-fanout routes presence here.
    private let workspaceFollowers = Mutex(WorkspaceFollowers())

    private struct WorkspaceFollowers {
        var sessions: [UUID: [String: NativeSession]] = [:]
        var bySession: [String: Set<UUID>] = [:]
    }

    init(
        settings: NativeSettings, gatewayId: String, verifier: AccessTokenVerifier, access: ConversationAccess, events: GatewayEventPublisher,
        interest: GatewayInterest, checkpoints: SessionCheckpoints, logger: Logger
    ) {
        self.settings = settings
        self.gatewayId = gatewayId
        self.verifier = verifier
        self.access = access
        self.events = events
        self.interest = interest
        self.checkpoints = checkpoints
        self.logger = logger
    }

    // MARK: connections

    /// A new WebSocket: registered for heartbeat checks, greeted with hello.
    func open(abort: @escaping @Sendable () -> Void) -> NativeConnection {
        let connection = NativeConnection(maxQueuedFrames: settings.maxQueuedFrames, maxQueuedBytes: settings.maxQueuedBytes, abort: abort)
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
        connection.send(NativeFrames.hello(heartbeatMilliseconds: settings.heartbeatIntervalMilliseconds))
        return connection
    }

    /// The WebSocket ended: its session (if any) detaches and is checkpointed for a resume.
    func closed(_ connection: NativeConnection, session: NativeSession?) {
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
        connection.close(code: NativeClose.unknownError, reason: "closed")
        if let session, session.detach(connection) {
            events.publish(session.checkpoint(gatewayId: gatewayId, attachedAt: nil))
        }
    }

    // MARK: inbound frames

    /// Handles one client frame; returns the connection's session (set by identify or resume).
    func receive(_ text: String, on connection: NativeConnection, session: NativeSession?) async -> NativeSession? {
        guard let frame = NativeFrames.Inbound(text) else {
            connection.close(code: NativeClose.decodeError, reason: "not a JSON object with an op")
            return session
        }
        switch frame.op {
        case "heartbeat":
            connection.heartbeat()
            connection.send(NativeFrames.heartbeatAck)
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

    private func refuse(_ connection: NativeConnection, _ code: UInt16, _ reason: String, _ session: NativeSession?) -> NativeSession? {
        connection.close(code: code, reason: reason)
        return session
    }

    private func user(of frame: NativeFrames.Inbound) async -> UserID? {
        guard let token = frame.string(\.token), let bare = bareToken(fromAuthorizationHeader: token),
            let claims = try? await verifier.verify(bare)
        else { return nil }
        return UserID(claims.userId)
    }

    private func identify(_ frame: NativeFrames.Inbound, on connection: NativeConnection) async -> NativeSession? {
        let device = frame.string(\.device)
        guard (device?.utf8.count ?? 0) <= 128 else { return refuse(connection, NativeClose.decodeError, "device is longer than 128 bytes", nil) }
        guard let user = await user(of: frame) else { return refuse(connection, NativeClose.authenticationFailed, "authentication failed", nil) }
        let snapshot: ReadySnapshot
        do {
            snapshot = try ReadySnapshot(try await access.sessionSnapshot(user: user))
        } catch {
            logger.warning("native identify: chat's session snapshot failed", metadata: ["error": "\(error)"])
            return refuse(connection, NativeClose.unknownError, "try again", nil)
        }
        let session = NativeSession(id: SocketIOServer.randomId(), userId: user, openedAt: Date(), maxMarks: settings.resumeMarks)
        let now = Timestamp.milliseconds(Date())
        for (conversation, kind, workspace) in snapshot.conversations {
            _ = session.follow(conversation, kind: kind, workspace: workspace, from: now)
        }
        register(session)
        let ready =
            #"{"session_id":"\#(session.id)","user_id":"\#(user)","heartbeat_interval":\#(settings.heartbeatIntervalMilliseconds),"#
            + snapshot.members
        guard session.attachReady(connection, json: ready) else { return refuse(connection, NativeClose.unknownError, "try again", nil) }
        events.publish(
            GatewayEvents.SessionOpened(
                sessionId: session.id, gatewayId: gatewayId, userId: user, clientProtocol: .native, openedAt: session.openedAt,
                gatewayInstance: events.instanceId, device: device
            ))
        return session
    }

    private func resume(_ frame: NativeFrames.Inbound, on connection: NativeConnection) async -> NativeSession? {
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
            guard let replayed = try await access.replay(user: user, cursors: cursors, limit: settings.replayLimit) else {
                return refuse(connection, NativeClose.notResumable, "too far behind: identify anew", session)
            }
            // Access is checked again: the checkpoint may follow conversations the user left
            // while detached (or while no gateway watched): they end here, live and replayed.
            unfollow(session, replayed.removed.filter { session.kind(of: $0) != nil })
            if !session.finishResume(replayed: replayed.messages, removed: replayed.removed) {
                return refuse(connection, NativeClose.notResumable, "too far behind: identify anew", session)
            }
            syncWorkspaces(session)
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
    /// gateway's checkpoint travels through Kafka): waits up to 10 s for one that has reached
    /// `seq` (an older one, from an earlier detach or resume, may still be the latest here),
    /// then takes the latest there is.
    private func resumable(_ sessionId: String, seq: Int) async -> NativeSession? {
        if let session = sessions.withLock({ $0[sessionId] }) { return session }
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let checkpoint = checkpoints.checkpoint(sessionId), checkpoint.seq >= seq || ContinuousClock.now >= deadline {
                let rebuilt = NativeSession(checkpoint: checkpoint, maxMarks: settings.resumeMarks)
                // Two resumes racing for one unknown session: the first registration wins.
                let (session, isNew) = sessions.withLock { sessions -> (NativeSession, Bool) in
                    if let existing = sessions[sessionId] { return (existing, false) }
                    sessions[sessionId] = rebuilt
                    return (rebuilt, true)
                }
                if isNew { follow(session, session.conversationIds) }
                return session
            }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func register(_ session: NativeSession) {
        sessions.withLock { $0[session.id] = session }
        follow(session, session.conversationIds)
    }

    private func follow(_ session: NativeSession, _ conversations: [UUID]) {
        followers.withLock { followers in
            for conversation in conversations {
                let wasEmpty = followers[conversation]?.isEmpty ?? true
                followers[conversation, default: [:]][session.id] = session
                if wasEmpty { interest.hold(conversation) }
            }
        }
        syncWorkspaces(session)
    }

    /// Makes the session a follower of exactly the workspaces of its conversations (none once
    /// it ended), holding and releasing the gateway's interest in each.
    private func syncWorkspaces(_ session: NativeSession) {
        let workspaces = session.workspaceIds
        workspaceFollowers.withLock { w in
            let before = w.bySession[session.id] ?? []
            guard before != workspaces else { return }
            for added in workspaces.subtracting(before) {
                if w.sessions[added] == nil { interest.hold(added) }
                w.sessions[added, default: [:]][session.id] = session
            }
            for removed in before.subtracting(workspaces) {
                w.sessions[removed]?[session.id] = nil
                if w.sessions[removed]?.isEmpty == true {
                    w.sessions[removed] = nil
                    interest.release(removed)
                }
            }
            w.bySession[session.id] = workspaces.isEmpty ? nil : workspaces
        }
    }

    private func subscribe(_ session: NativeSession, to conversation: UUID, connection: NativeConnection) async {
        guard let readable = await access.mayRead(user: session.userId.description, conversation: conversation) else {
            connection.send(NativeFrames.error(code: NativeClose.notMember, message: "not a member of the conversation"))
            return
        }
        if session.follow(conversation, kind: readable.kind, workspace: readable.workspaceId, from: Timestamp.milliseconds(Date())) {
            follow(session, [conversation])
        }
        connection.send(NativeFrames.subscribed(conversation))
    }

    private func typing(in conversation: UUID, by session: NativeSession) {
        guard let kind = session.kind(of: conversation), session.mayType(in: conversation, now: .now, interval: settings.typingInterval) else { return }
        events.publish(GatewayEvents.TypingStarted(conversationId: conversation, kind: kind, userId: session.userId, startedAt: Date()))
    }

    // MARK: live dispatch

    /// A message from the delivery stream, to every session following its conversation.
    func deliver(type: String, conversation: UUID, messageId: UUID, createdAt: Date, json: ByteBuffer) {
        let event = NativeSession.Pending(
            type: type, conversationId: conversation, messageId: messageId, createdAtMilliseconds: Timestamp.milliseconds(createdAt), json: json
        )
        for session in followers(of: conversation) where !session.dispatch(event) {
            session.connection?.closeNow(code: NativeClose.tooSlow, reason: "too far behind: resume")
        }
    }

    /// A typing event, to the followers of the conversation other than the typist.
    func deliverTyping(_ typing: GatewayEvents.TypingStarted) {
        let json = NativeFrames.typing(conversation: typing.conversationId, user: typing.userId.description, kind: typing.kind.rawValue)
        let event = NativeSession.Pending(
            type: "typing", conversationId: typing.conversationId, messageId: nil, createdAtMilliseconds: 0, json: ByteBuffer(string: json)
        )
        for session in followers(of: typing.conversationId) where session.userId != typing.userId && !session.dispatch(event) {
            session.connection?.closeNow(code: NativeClose.tooSlow, reason: "too far behind: resume")
        }
    }

    /// A member's status changed: to the sessions that share one of the member's workspaces
    /// (other than the member's own). The frame names no workspace: a session sees the status
    /// of people it shares a workspace with, never where else they are.
    func deliverPresence(_ change: PresenceEvents.StatusChanged) {
        let recipients = workspaceFollowers.withLock { w in
            change.workspaceIds.reduce(into: [String: NativeSession]()) { all, workspace in
                all.merge(w.sessions[workspace.uuid] ?? [:]) { first, _ in first }
            }
        }
        guard !recipients.isEmpty, let anyWorkspace = change.workspaceIds.first else { return }
        let json = NativeFrames.presence(user: change.userId.description, status: change.status.rawValue, lastSeen: change.lastSeen)
        let event = NativeSession.Pending(
            type: "presence.update", conversationId: anyWorkspace.uuid, messageId: nil, createdAtMilliseconds: 0, json: ByteBuffer(string: json))
        for session in recipients.values where session.userId != change.userId && !session.dispatch(event) {
            session.connection?.closeNow(code: NativeClose.tooSlow, reason: "too far behind: resume")
        }
    }

    // MARK: membership changes

    /// Someone may no longer read conversations (they left a channel or a workspace, or it was
    /// deleted): sessions of `user` (of everyone when nil) stop following them — and the DM
    /// rooms they follow in `workspace`, when given — and get `conversation.removed`.
    func revoke(user: UserID?, conversations: [UUID], roomsIn workspace: UUID?) {
        var affected: [String: (session: NativeSession, conversations: [UUID])] = [:]
        for conversation in conversations {
            for session in followers(of: conversation) where user == nil || session.userId == user {
                affected[session.id, default: (session, [])].conversations.append(conversation)
            }
        }
        if let workspace {
            for session in sessions.withLock({ Array($0.values) }) where user == nil || session.userId == user {
                affected[session.id, default: (session, [])].conversations.append(contentsOf: session.rooms(in: workspace))
            }
        }
        for (session, conversations) in affected.values {
            unfollow(session, conversations.filter { session.unfollow($0) })
        }
    }

    private func unfollow(_ session: NativeSession, _ conversations: [UUID]) {
        followers.withLock { followers in
            for conversation in conversations where followers[conversation]?.removeValue(forKey: session.id) != nil {
                if followers[conversation]?.isEmpty ?? true {
                    followers[conversation] = nil
                    interest.release(conversation)
                }
            }
        }
        syncWorkspaces(session)
    }

    private func followers(of conversation: UUID) -> [NativeSession] {
        followers.withLock { $0[conversation].map { Array($0.values) } ?? [] }
    }

    var hasFollowers: Bool { followers.withLock { !$0.isEmpty } }

    // MARK: housekeeping

    /// Closes connections that never identified or stopped heartbeating, and ends sessions
    /// detached for longer than the resume window (run by `NativeHeartbeat` every second).
    func sweep(now: ContinuousClock.Instant) {
        for connection in connections.withLock({ Array($0.values) }) {
            switch connection.health(now: now, interval: settings.heartbeatInterval, writeTimeout: settings.writeTimeout) {
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
        guard let conversations = session.end() else { return }
        sessions.withLock { _ = $0.removeValue(forKey: session.id) }
        unfollow(session, conversations)
        // Resumed on another gateway since: that one owns it now (and its key on the topic).
        if let latest = checkpoints.checkpoint(session.id), latest.gatewayId != gatewayId { return }
        events.publishFinal(GatewayEvents.SessionClosed(sessionId: session.id, gatewayId: gatewayId, userId: session.userId, closedAt: Date()))
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
        members = String(text.dropFirst())
    }
}
