import AccessTokens
import ChatInternalAPI
import Database
import Events
import Foundation
import Logging
import NIOCore
import ServiceKit
import Synchronization

/// STOMP 1.2 (and 1.1) over WebSocket (docs/stomp.md; client contract §2.2): CONNECT with an
/// access token, SUBSCRIBE to rooms and communities (membership checked), SEND to the
/// application destinations (each the REST operation it stands for), heart-beats both ways,
/// RECEIPT, and ERROR (then close) for whatever breaks the protocol or is refused.
final class StompServer: Sendable {
    let settings: StompSettings
    let hub: RealtimeHub
    let operations: StompOperations
    private let logger: Logger
    private let connections = Mutex<[ObjectIdentifier: Link]>([:])
    /// When each new session's first heart-beat is due: spread, so sessions connected together do not beat together.
    private let beatPhases = HeartbeatPhases()

    /// A WebSocket's STOMP state between frames: the parser (frames may span WebSocket
    /// messages) and, once connected, the session.
    struct Link: Sendable {
        var connection: LiveConnection
        var parser: StompParser
        var session: StompSession?
        /// Where this connection's frames link attachments (`StompFileLinks`).
        var fileBase: String
    }

    init(settings: StompSettings, hub: RealtimeHub, operations: StompOperations, logger: Logger) {
        self.settings = settings
        self.hub = hub
        self.operations = operations
        self.logger = logger
    }

    // MARK: connections

    /// - Parameter host: the Host of the WebSocket upgrade (attachment URLs when `gateway.public-url` is empty).
    func open(abort: @escaping @Sendable () -> Void, host: String?) -> Link {
        let connection = LiveConnection(maxQueuedFrames: settings.maxQueuedFrames, maxQueuedBytes: settings.maxQueuedBytes, abort: abort)
        let parser = StompParser(
            maxFrameBytes: settings.maxFrameBytes, maxHeaderCount: settings.maxHeaders, maxHeaderLineBytes: settings.maxHeaderLineBytes)
        let link = Link(connection: connection, parser: parser, fileBase: settings.files.base(host: host))
        connections.withLock { $0[ObjectIdentifier(connection)] = link }
        return link
    }

    /// The WebSocket ended: the session's follows end with it.
    func closed(_ link: Link) {
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(link.connection)) }
        link.connection.close(code: 1000, reason: "closed")
        if let session = link.session, session.end() {
            hub.unfollowAll(session)
            hub.sessionClosed(session.id, user: session.userId)
        }
    }

    // MARK: inbound

    /// A WebSocket message that is one heart-beat (an EOL) while no frame is begun, taken on the
    /// socket's event loop where it arrived: no task, no hop to the global executor and back
    /// (docs/benchmarks.md, part 44). `LiveSocket` asks only when no earlier message of the
    /// connection waits. False: the message goes the usual way (`receive`).
    func heartbeatAtOnce(_ text: String, link: Link) -> Bool {
        guard text == "\n" || text == "\r\n", link.parser.isBetweenFrames else { return false }
        link.connection.heartbeat()
        return true
    }

    /// Handles one WebSocket message: any number of frames and heart-beats.
    func receive(_ text: String, link: Link) async -> Link {
        var link = link
        link.connection.heartbeat()
        link.parser.append(text.utf8)
        while !link.connection.isClosing {
            let result: StompParseResult?
            do {
                result = try link.parser.next()
            } catch {
                fail(link.connection, error.message, code: error == .frameTooLarge(limit: settings.maxFrameBytes) ? 1009 : 1002)
                break
            }
            guard let result else { break }
            guard case .frame(let frame) = result else { continue }
            link.session = await handle(frame, link: link)
        }
        return link
    }

    private func handle(_ frame: StompFrame, link: Link) async -> StompSession? {
        let connection = link.connection
        guard frame.command.isClientCommand else {
            fail(connection, "\(frame.command.rawValue) is a server frame")
            return link.session
        }
        guard let session = link.session else {
            if frame.command == .connect || frame.command == .stomp { return await connect(frame, link: link) }
            fail(connection, "not connected: send CONNECT first")
            return nil
        }
        do {
            switch frame.command {
            case .connect, .stomp: throw StompOperations.Refusal(message: "already connected")
            case .subscribe: try await subscribe(frame, session)
            case .unsubscribe: try unsubscribe(frame, session)
            case .send: try await send(frame, session)
            case .ack, .nack:
                guard frame.headers[StompHeaderName.id] != nil else { throw StompOperations.Refusal(message: "\(frame.command.rawValue) needs an id header") }
            case .begin, .commit, .abort: throw StompOperations.Refusal(message: "transactions are not supported")
            case .disconnect:
                receipt(frame, on: connection)
                connection.close(code: 1000, reason: "disconnected")
                return session
            case .connected, .message, .receipt, .error: break
            }
            receipt(frame, on: connection)
        } catch let refusal as StompOperations.Refusal {
            fail(connection, refusal.message, receiptId: frame.headers[StompHeaderName.receipt])
        } catch {
            fail(connection, "\(error)", receiptId: frame.headers[StompHeaderName.receipt])
        }
        return session
    }

    private func receipt(_ frame: StompFrame, on connection: LiveConnection) {
        guard let id = frame.headers[StompHeaderName.receipt] else { return }
        send(.receipt(id: id), on: connection)
    }

    private func send(_ frame: StompFrame, on connection: LiveConnection) {
        if !connection.send(OutboundText(String(decoding: frame.encoded(), as: UTF8.self))) {
            connection.closeNow(code: 1008, reason: "too far behind")
        }
    }

    /// An ERROR frame with `message`, then the close the protocol requires after one.
    private func fail(_ connection: LiveConnection, _ message: String, receiptId: String? = nil, code: UInt16 = 1002) {
        send(.error(message: message, receiptId: receiptId), on: connection)
        connection.close(code: code, reason: message.count <= 100 ? message : "protocol error")
    }

    // MARK: CONNECT

    private func connect(_ frame: StompFrame, link: Link) async -> StompSession? {
        let connection = link.connection
        guard let version = StompVersion.negotiate(acceptVersion: frame.headers[StompHeaderName.acceptVersion]) else {
            var error = StompFrame.error(message: "supported protocol versions are \(StompVersion.supportedHeaderValue)")
            error.headers.append("version", StompVersion.supportedHeaderValue)
            send(error, on: connection)
            connection.close(code: 1002, reason: "unsupported STOMP version")
            return nil
        }
        let clientBeat: StompHeartBeat
        do {
            clientBeat = try StompHeartBeat(headerValue: frame.headers[StompHeaderName.heartBeat])
        } catch {
            fail(connection, error.message)
            return nil
        }
        connection.markIdentified()
        connection.setBusy(true)
        defer { connection.setBusy(false) }
        guard let token = frame.headers["access-token"] ?? frame.headers["Authorization"] ?? frame.headers[StompHeaderName.passcode],
            let claims = await hub.claims(ofToken: token), let user = UserID(claims.userId)
        else {
            fail(connection, "authentication failed", code: 1008)
            return nil
        }
        // Smooth sends its integer id; other clients the user id.
        if let claimed = frame.headers["user-id"], claimed.lowercased() != user.description, claimed != claims.alias.map(String.init) {
            fail(connection, "user-id is not the token's user", code: 1008)
            return nil
        }
        let offer = StompHeartBeat(sendInterval: settings.heartbeatMilliseconds, receiveInterval: settings.heartbeatMilliseconds)
        let schedule = StompHeartBeat.negotiate(client: clientBeat, server: offer)
        let session = StompSession(
            id: randomSessionId(), userId: user, userAlias: claims.alias, connection: connection, schedule: schedule, fileBase: link.fileBase,
            firstBeatAdvance: schedule.serverSendEvery.map { beatPhases.nextAdvance(period: .milliseconds($0)) } ?? .zero)
        connections.withLock { $0[ObjectIdentifier(connection)]?.session = session }
        hub.sessionOpened(session.id, user: user, protocol: .stomp)
        send(.connected(version: version, heartBeat: offer, server: "chatsuite", session: session.id), on: connection)
        return session
    }

    // MARK: SUBSCRIBE / UNSUBSCRIBE

    private func subscribe(_ frame: StompFrame, _ session: StompSession) async throws(StompOperations.Refusal) {
        guard let id = frame.headers[StompHeaderName.id], !id.isEmpty, id.utf8.count <= 128 else {
            throw .init(message: "SUBSCRIBE needs an id header (at most 128 bytes)")
        }
        guard let destination = frame.headers[StompHeaderName.destination], let topic = StompTopic(destination: destination) else {
            throw .init(message: "unknown destination")
        }
        guard !session.hasSubscription(id) else { throw .init(message: "subscription id \(id) is in use") }
        guard session.subscriptionCount < settings.maxSubscriptions else { throw .init(message: "too many subscriptions (\(settings.maxSubscriptions))") }
        guard let ack = StompSession.AckMode(rawValue: frame.headers[StompHeaderName.ack] ?? "auto") else {
            throw .init(message: "ack must be auto, client or client-individual")
        }
        let target = StompTarget(topic.id)
        guard target != nil else { throw .init(message: "no such destination: \(destination)") }
        guard hub.admission.allowJoin(from: session.userId.description) else { throw .init(message: "too many subscriptions; slow down") }
        let user = session.userId.description
        let follow: LiveFollow
        switch topic {
        case .group, .direct:
            let expected: ChatEvents.Conversation.Kind = if case .group = topic { .channel } else { .dm }
            guard let (conversation, readable) = await readable(target, kind: expected, user: user) else {
                throw .init(message: "not a member of \(destination)")
            }
            guard readable.kind == expected else { throw .init(message: "no such destination: \(destination)") }
            follow = LiveFollow(id: conversation, kind: .init(readable.kind), workspaceId: readable.workspaceId, userId: session.userId)
        case .room:
            // A channel's or a room's id (Smooth's integer ids: a channel's first).
            var found = await readable(target, kind: .channel, user: user)
            if found == nil, case .alias = target { found = await readable(target, kind: .dm, user: user) }
            guard let (conversation, readable) = found else { throw .init(message: "not a member of \(destination)") }
            // A workspace's presence; a personal room (no workspace) has none to show, but the
            // subscription stands (and ends with the membership).
            let scope = readable.workspaceId ?? conversation
            follow = LiveFollow(id: scope, kind: .workspace, workspaceId: readable.workspaceId, userId: session.userId)
        case .community:
            guard let community = await hub.access.community(topic.id, member: session.userId) else {
                throw .init(message: "not a member of \(destination)")
            }
            follow = LiveFollow(id: community, kind: .workspace, workspaceId: community, userId: session.userId)
        }
        let subscription = StompSession.Subscription(id: id, destination: destination, topic: topic, ack: ack, follow: follow)
        if session.subscribe(subscription) { hub.follow(session, follow) }
        await hub.interestConfirmed(for: follow)  // before the RECEIPT
    }

    private func unsubscribe(_ frame: StompFrame, _ session: StompSession) throws(StompOperations.Refusal) {
        guard let id = frame.headers[StompHeaderName.id] else { throw .init(message: "UNSUBSCRIBE needs an id header") }
        let (removed, last) = session.unsubscribe(id)
        guard removed else { throw .init(message: "no subscription \(id)") }
        if let last { hub.unfollow(session, last.id) }
    }

    // MARK: SEND

    private func send(_ frame: StompFrame, _ session: StompSession) async throws(StompOperations.Refusal) {
        guard let destination = frame.headers[StompHeaderName.destination], let target = StompSend(destination: destination) else {
            throw .init(message: "unknown destination")
        }
        guard let body = StompSendBody(frame.body) else { throw .init(message: "the body must be a JSON object") }
        if let claimed = body.string("userId") ?? body.string("user_id"), claimed.lowercased() != session.userId.description,
            claimed != session.userAlias.map(String.init)
        {
            throw .init(message: "userId is not the connected user")
        }
        let requestId = frame.headers[StompHeaderName.receipt].flatMap { $0.utf8.count <= 64 ? "stomp-\($0)" : nil } ?? UUIDv7.generate().lowercased
        switch target {
        case .message(let kind), .reply(let kind):
            let (conversation, workspace) = try await resolve(body.string("channelId"), kind: kind, session)
            let parent = body.string("parentId") ?? body.string("parent_id")
            if case .reply = target, parent.flatMap(UUID.init(uuidString:)) == nil { throw .init(message: "a reply needs a parentId") }
            try await operations.post(
                body.string("content") ?? "", parent: parent.flatMap(UUID.init(uuidString:)), in: conversation, workspace: workspace, as: session.userId,
                requestId: requestId)
        case .modify(let kind):
            let (conversation, workspace) = try await resolve(body.string("channelId"), kind: kind, session)
            guard let message = body.string("id").flatMap(UUID.init(uuidString:)) else { throw .init(message: "modify needs the message id") }
            try await operations.edit(
                message, content: body.string("content") ?? "", in: conversation, workspace: workspace, as: session.userId, requestId: requestId)
        case .delete(let kind):
            let (conversation, workspace) = try await resolve(body.string("channelId"), kind: kind, session)
            guard let message = body.string("id").flatMap(UUID.init(uuidString:)) else { throw .init(message: "delete needs the message id") }
            try await operations.delete(message, in: conversation, workspace: workspace, as: session.userId, requestId: requestId)
        case .typing(let kind):
            let (conversation, _) = try await resolve(body.string("channelId"), kind: kind, session)
            guard session.mayType(in: conversation.id, now: .now, interval: hub.settings.typingInterval) else { return }
            let name = body.string("content").map { String($0.utf8.prefix(64)) ?? "" }
            let conversationKind: ChatEvents.Conversation.Kind = conversation.kind == .dm ? .dm : .channel
            hub.events.publish(
                GatewayEvents.TypingStarted(conversationId: conversation.id, kind: conversationKind, userId: session.userId, startedAt: Date(), name: name))
        case .joinChannel:
            // `home` (the app's home screen) reads nothing; `c-{id}` / `r-{id}` mark the room read.
            guard let room = body.string("channel_id"), room != "home" else { return }
            let kind: StompConversationKind
            if room.hasPrefix("c-") {
                kind = .channel
            } else if room.hasPrefix("r-") {
                kind = .direct
            } else {
                throw .init(message: "channel_id must be home, c-{id} or r-{id}")
            }
            let (conversation, workspace) = try await resolve(String(room.dropFirst(2)), kind: kind, session)
            try await operations.markRead(conversation, workspace: workspace, as: session.userId, requestId: requestId)
        case .communitySignaling:
            guard let named = body.string("community_id"), StompTarget(named) != nil else { throw .init(message: "community_id is required") }
            let signal = body.string("type") ?? ""
            guard (1...32).contains(signal.utf8.count), signal.allSatisfy({ ("a"..."z").contains($0) || $0 == "-" }) else {
                throw .init(message: "type must be 1–32 of a–z and -")
            }
            // A community this session subscribes to was checked then; any other, now.
            var community = session.knownCommunity(named)
            if community == nil { community = await hub.access.community(named, member: session.userId) }
            guard let community else { throw .init(message: "not a member of the community") }
            hub.events.publish(GatewayEvents.CommunitySignal(communityId: community, userId: session.userId, signal: signal, at: Date()))
        }
    }

    /// The conversation a SEND names and its workspace (nil for a personal room): one a
    /// subscription resolved, else chat's reader check (which also refuses a conversation the
    /// user may not read).
    private func resolve(_ id: String?, kind: StompConversationKind, _ session: StompSession) async throws(StompOperations.Refusal) -> (
        LiveFollow, UUID?
    ) {
        guard let target = id.flatMap(StompTarget.init) else { throw .init(message: "channelId is required") }
        let expected: LiveFollow.Kind = kind == .channel ? .channel : .dm
        if case .id(let id) = target, let known = session.knownConversation(id), known.kind == expected {
            return (known, known.workspaceId)
        }
        guard let (conversation, readable) = await readable(target, kind: kind == .channel ? .channel : .dm, user: session.userId.description),
            LiveFollow.Kind(readable.kind) == expected, readable.workspaceId != nil || expected == .dm
        else { throw .init(message: "E13") }
        return (LiveFollow(id: conversation, kind: expected, workspaceId: readable.workspaceId, userId: session.userId), readable.workspaceId)
    }

    /// Chat's reader check for a conversation named by id or (Smooth) by integer alias: its id
    /// and what chat answered; nil when the user may not read it.
    private func readable(_ target: StompTarget?, kind: ChatEvents.Conversation.Kind, user: String) async -> (UUID, ChatInternal.Readable)? {
        switch target {
        case .id(let id)?:
            return await hub.access.mayRead(user: user, conversation: id).map { (id, $0) }
        case .alias(let alias)?:
            guard let readable = await hub.access.mayRead(user: user, alias: alias, kind: kind), let id = readable.conversationId else { return nil }
            return (id, readable)
        case nil:
            return nil
        }
    }

    // MARK: housekeeping

    /// Every second (a `SweepService`): heart-beats that are due, connections that never
    /// connected or whose client went silent (twice its negotiated interval), stalled writes.
    func sweep(now: ContinuousClock.Instant) {
        for link in connections.withLock({ Array($0.values) }) {
            let connection = link.connection
            // `health` calls a connection a zombie after 1.5 × the interval: pass ⁴⁄₃ of the
            // allowance for a grace of twice the negotiated interval.
            let silence: Duration =
                if let session = link.session {
                    session.schedule.clientExpectedEvery.map { .milliseconds($0) * 2 * 2 / 3 } ?? .seconds(365 * 86_400)
                } else {
                    settings.connectTimeout
                }
            switch connection.health(now: now, interval: silence, writeTimeout: hub.settings.writeTimeout) {
            case .fine: link.session?.heartbeatIfDue(now: now)
            case .stalled: connection.abortConnection()
            case .notIdentified: fail(connection, "no CONNECT in time", code: 1008)
            case .zombie: fail(connection, "no heart-beat from the client", code: 1008)
            }
        }
    }

    /// Shutdown: every connection ends with an ERROR saying so.
    func shutdown() {
        for link in connections.withLock({ Array($0.values) }) {
            fail(link.connection, "server shutting down", code: 1001)
        }
    }
}

/// The JSON object of a SEND (client contract §2.2): string members, numbers read as strings
/// (Smooth sends integer ids).
struct StompSendBody {
    private let object: [String: Any]

    init?(_ bytes: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        self.object = object
    }

    func string(_ key: String) -> String? {
        switch object[key] {
        case let string as String: string
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }
}

/// An id in a destination or a body: the suite's UUID, or a legacy client's integer alias.
enum StompTarget: Equatable, Sendable {
    case id(UUID)
    case alias(Int64)

    init?(_ text: String) {
        if let id = UUID(parsing: text) {
            self = .id(id)
        } else if let alias = IntegerAlias.parse(text) {
            self = .alias(alias)
        } else {
            return nil
        }
    }
}
