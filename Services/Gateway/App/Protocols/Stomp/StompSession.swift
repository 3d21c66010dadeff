import Events
import Foundation
import NIOCore
import Synchronization

/// One connected STOMP client (after `CONNECT`): its user, subscriptions, message ids and
/// heart-beat schedule; frames go out on its `LiveConnection`. The hub routes events here by
/// what the subscriptions follow: a conversation (`/topic/group/…`, `/topic/direct/…`) or a
/// workspace (`/topic/community/…`, and `/topic/{roomId}`'s presence, which follows the room's
/// workspace).
final class StompSession: Sendable {
    enum AckMode: String, Sendable {
        case auto
        case client
        case clientIndividual = "client-individual"
    }

    struct Subscription: Sendable {
        var id: String
        var destination: String
        var topic: StompTopic
        var ack: AckMode
        /// What the hub routes for it: the conversation, or the workspace.
        var follow: LiveFollow
        /// The MESSAGE frame's first headers, escaped once: `MESSAGE`, `destination`,
        /// `subscription`, `content-type` (each message adds its id and length).
        let head: String

        init(id: String, destination: String, topic: StompTopic, ack: AckMode, follow: LiveFollow) {
            self.id = id
            self.destination = destination
            self.topic = topic
            self.ack = ack
            self.follow = follow
            let headers = StompHeaders([
                (StompHeaderName.destination, destination), (StompHeaderName.subscription, id), (StompHeaderName.contentType, "application/json"),
            ])
            var encoded = StompFrame(command: .message, headers: headers).encoded()
            encoded.removeLast(2)  // the blank line's LF and the NUL: per-message headers follow
            head = String(decoding: encoded, as: UTF8.self)
        }
    }

    private struct State: Sendable {
        var subscriptions: [String: Subscription] = [:]
        var messages = 0
        var lastTyping: [UUID: ContinuousClock.Instant] = [:]
        var lastHeartbeatSent: ContinuousClock.Instant
        var ended = false
    }

    let id: String
    let userId: UserID
    /// The user's integer alias (from the token), which Smooth names the user by.
    let userAlias: Int64?
    let connection: LiveConnection
    /// How often the server sends a heart-beat, and how often the client must (nil: never).
    let schedule: StompHeartBeatSchedule
    /// Where its frames link attachments: public URL and chat prefix (`StompFileLinks`).
    let fileBase: String
    private let state: Mutex<State>

    /// - Parameter firstBeatAdvance: how much sooner than one interval after now the first
    ///   heart-beat is due (`HeartbeatPhases`: sessions connected together do not beat together).
    init(
        id: String, userId: UserID, userAlias: Int64? = nil, connection: LiveConnection, schedule: StompHeartBeatSchedule, fileBase: String,
        firstBeatAdvance: Duration
    ) {
        state = Mutex(State(lastHeartbeatSent: .now - firstBeatAdvance))
        self.id = id
        self.userId = userId
        self.userAlias = userAlias
        self.connection = connection
        self.schedule = schedule
        self.fileBase = fileBase
    }

    // MARK: subscriptions

    var subscriptionCount: Int { state.withLock { $0.subscriptions.count } }

    func hasSubscription(_ id: String) -> Bool { state.withLock { $0.subscriptions[id] != nil } }

    /// Adds a subscription; true when it is the first one on its follow (the hub is to follow it).
    func subscribe(_ subscription: Subscription) -> Bool {
        state.withLock { state in
            let first = !state.subscriptions.values.contains { $0.follow.id == subscription.follow.id }
            state.subscriptions[subscription.id] = subscription
            return first
        }
    }

    /// Drops a subscription; its follow when no other subscription needs it (the hub is to drop it).
    func unsubscribe(_ id: String) -> (removed: Bool, lastOf: LiveFollow?) {
        state.withLock { state in
            guard let removed = state.subscriptions.removeValue(forKey: id) else { return (false, nil) }
            let stillNeeded = state.subscriptions.values.contains { $0.follow.id == removed.follow.id }
            return (true, stillNeeded ? nil : removed.follow)
        }
    }

    /// The conversation a subscription of this session already resolved (SEND skips chat's check).
    func knownConversation(_ id: UUID) -> LiveFollow? {
        state.withLock { state in state.subscriptions.values.first { $0.follow.id == id && $0.follow.kind != .workspace }?.follow }
    }

    /// The community (workspace) a `/topic/community/…` subscription of this session resolved,
    /// named as a client names it (its id, or the integer alias it subscribed with). Chat checked
    /// the membership when the subscription was made, and the subscription ends with it
    /// (`revoked`), so a community signal to it skips chat's check: one request fewer per signal,
    /// and a slow chat no longer turns a member's signal into a refusal (and the connection's close).
    func knownCommunity(_ named: String) -> UUID? {
        let id = UUID(parsing: named)
        return state.withLock { state in
            state.subscriptions.values.first { subscription in
                guard case .community(let subscribed) = subscription.topic, subscription.follow.kind == .workspace else { return false }
                return subscribed == named || subscription.follow.id == id
            }?.follow.id
        }
    }

    /// Whether a typing event may be forwarded now (and records it).
    func mayType(in conversation: UUID, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        state.withLock { state in
            if let last = state.lastTyping[conversation], now - last < interval { return false }
            if state.lastTyping.count > 256 { state.lastTyping = [:] }
            state.lastTyping[conversation] = now
            return true
        }
    }

    /// Ends the session once; false when it already ended.
    func end() -> Bool {
        state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
    }

    // MARK: frames

    /// A heart-beat (an EOL) when one is due.
    func heartbeatIfDue(now: ContinuousClock.Instant) {
        guard let every = schedule.serverSendEvery else { return }
        let due = state.withLock { state in
            guard now - state.lastHeartbeatSent >= .milliseconds(every) else { return false }
            state.lastHeartbeatSent = now
            return true
        }
        if due { _ = connection.send(OutboundText("\n")) }
    }

    /// A MESSAGE frame for `subscription` around a body other subscribers share: the
    /// subscription's escaped head, this message's id (our own characters: no escaping) and
    /// length, the body, the NUL. (Internal for `MessageFrameTests`.)
    func message(_ subscription: Subscription, body: ByteBuffer, number: Int) -> OutboundText {
        let messageId = "\(id)-\(number)"
        var head = subscription.head
        head += "message-id:\(messageId)\n"
        if subscription.ack != .auto { head += "ack:\(messageId)\n" }
        head += "content-length:\(body.readableBytes)\n\n"
        return OutboundText(head: head, shared: body, tail: "\0")
    }

    /// Queues `body` to every subscription `matching`; a full queue drops the client.
    private func send(_ body: ByteBuffer, to matching: (Subscription) -> Bool) {
        let frames = state.withLock { state -> [OutboundText] in
            guard !state.ended else { return [] }
            var frames: [OutboundText] = []
            for subscription in state.subscriptions.values where matching(subscription) {
                state.messages += 1
                frames.append(message(subscription, body: body, number: state.messages))
            }
            return frames
        }
        if !frames.isEmpty, !connection.send(contentsOf: FrameList(frames)) {
            connection.closeNow(code: 1008, reason: "too far behind")
        }
    }
}

extension StompSession: LiveSubscriber {
    /// A room subscription's presence MESSAGE is one user's change.
    var presenceUpdates: PresenceUpdates { .each }

    func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
        switch delivery.event {
        case .presence(let change):
            let workspaces = Set(change.workspaceIds.map(\.uuid))
            let body = delivery.rendering(.init(format: .stomp)) { _ in OutboundText(StompMessages.presenceBody(of: change)) }.head
            send(body) { subscription in
                if case .room = subscription.topic, let workspace = subscription.follow.workspace { return workspaces.contains(workspace) }
                return false
            }
        case .signal(let signal):
            let body = delivery.rendering(.init(format: .stomp)) { _ in OutboundText(StompMessages.signalBody(of: signal)) }.head
            send(body) { subscription in
                if case .community = subscription.topic { return subscription.follow.id == signal.communityId }
                return false
            }
        default:
            // Only a message with files depends on the file base (its URLs name the host the client
            // reached): every other event is rendered once for all STOMP recipients, and the key
            // hashes no string per recipient.
            let body = delivery.rendering(.init(format: .stomp, fileBase: delivery.event.carriesFiles ? fileBase : nil)) {
                OutboundText(StompMessages.conversationBody(of: $0.event, fileBase: fileBase) ?? ByteBuffer())
            }.head
            guard body.readableBytes > 0 else { return }
            send(body) { $0.follow.id == follow.id && $0.follow.kind != .workspace }
        }
    }

    /// The user may no longer read the room or community: its subscriptions end, each with a
    /// last `{"type":"out"}` MESSAGE.
    func revoked(_ follow: LiveFollow) {
        let body = StompMessages.revokedBody(of: follow.id)
        let ended = state.withLock { state -> [Subscription] in
            let ended = state.subscriptions.values.filter { $0.follow.id == follow.id }
            for subscription in ended { state.subscriptions[subscription.id] = nil }
            return ended
        }
        guard !ended.isEmpty else { return }
        let frames = state.withLock { state in
            ended.map { subscription -> OutboundText in
                state.messages += 1
                return message(subscription, body: body, number: state.messages)
            }
        }
        if !connection.send(contentsOf: FrameList(frames)) { connection.closeNow(code: 1008, reason: "too far behind") }
    }
}
