import AccessTokens
import Events
import Foundation
import Logging
import Metrics
import Synchronization

/// What a subscriber follows: a conversation (channel or DM room), a workspace (its members'
/// presence and its community signals), or a study-app user (their study chats; `id` is
/// `StudyEvents.liveRoute(of:)` of the uid).
struct LiveFollow: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case channel, dm, workspace, studyUser

        init(_ kind: ChatEvents.Conversation.Kind) {
            switch kind {
            case .channel: self = .channel
            case .dm: self = .dm
            }
        }
    }

    var id: UUID
    var kind: Kind
    /// A conversation's workspace when known (an anonymous Socket.IO join does not know it); a
    /// workspace follow's own id.
    var workspaceId: UUID?
    /// Who follows; nil for an anonymous Socket.IO join.
    var userId: UserID?
    /// A Gen A Socket.IO namespace (`/ws-channel-{alias}`, Lilac) names the channel by its
    /// integer alias, and gets chats in Gen A's shape.
    var generationAAlias: Int64? = nil

    /// The workspace the follow is in (a workspace follow: itself).
    var workspace: UUID? { kind == .workspace ? id : workspaceId }
}

/// A protocol's client as the hub sees it: a Socket.IO session, a native session, a STOMP
/// connection. Called outside the hub's lock.
protocol LiveSubscriber: AnyObject, Sendable {
    /// An event for something the subscriber follows: it queues what its protocol makes of it
    /// (`delivery` shares one rendering per protocol) and closes itself when its queue is full.
    func deliver(_ delivery: LiveDelivery, for follow: LiveFollow)
    /// Its user may no longer read `follow`'s conversation or workspace; the hub has dropped the follow.
    func revoked(_ follow: LiveFollow)
    /// How the subscriber takes its workspaces' presence changes (a constant).
    var presenceUpdates: PresenceUpdates { get }
}

/// How a protocol takes presence: not at all (Socket.IO), each change as it comes (STOMP), or a
/// workspace's changes of one window together (native, `PresenceBatcher`).
enum PresenceUpdates: Sendable {
    case none, each, batched

    /// Whether a subscriber taking presence this way is routed `event`.
    func takes(_ event: LiveEvent) -> Bool {
        switch event {
        case .presence: self == .each
        case .presenceBatch: self == .batched
        default: true
        }
    }
}

/// The real-time core every protocol plugs into (docs/adding-a-protocol.md): who follows which
/// conversation and workspace, the gateway's interest in them (announced on
/// `gateway.interest.v1` for chat-fanout), delivery of the events chat-fanout routes here (each
/// once, however often Kafka redelivers it), membership revocation, and the services protocols
/// share — session events, token checks, chat's access checks, admission limits.
final class RealtimeHub: Sendable {
    let settings: RealtimeSettings
    let events: GatewayEventPublisher
    let access: ConversationAccess
    let verifier: AccessTokenVerifier
    let admission: RealtimeAdmission
    /// Every protocol's WebSockets write through these (`ChannelWriter`).
    let writeBatchers: EventLoopWriteBatchers
    private let interest: GatewayInterest
    private let state = Mutex(State())
    private let recent: Mutex<RecentIds>
    /// Presence changes waiting for the next flush (`PresenceFlush`) to the batched subscribers.
    let presenceBatcher = PresenceBatcher()
    private let delivered = Counter(label: "realtime_deliveries_total")
    private let duplicates = Counter(label: "realtime_duplicate_deliveries_total")

    private struct Follower {
        let subscriber: any LiveSubscriber
        var follow: LiveFollow
    }

    private struct Entry {
        let subscriber: any LiveSubscriber
        var follows: [UUID: LiveFollow] = [:]
    }

    private struct State {
        /// Conversation or workspace → its followers by subscriber.
        var followers: [UUID: [ObjectIdentifier: Follower]] = [:]
        /// `followers` of a conversation as an array, made by the first delivery after a change
        /// and dropped by the next change: a delivery takes the array with one reference count,
        /// not one per follower (each a write to a session object another thread writes too).
        var followerLists: [UUID: [Follower]] = [:]
        var subscribers: [ObjectIdentifier: Entry] = [:]
        /// Workspace → subscribers with follows in it, and how many.
        var workspaces: [UUID: [ObjectIdentifier: Int]] = [:]
    }

    init(
        settings: RealtimeSettings, events: GatewayEventPublisher, interest: GatewayInterest, access: ConversationAccess,
        verifier: AccessTokenVerifier, admission: RealtimeAdmission
    ) {
        self.settings = settings
        self.events = events
        self.interest = interest
        self.access = access
        self.verifier = verifier
        self.admission = admission
        writeBatchers = EventLoopWriteBatchers(sendRing: settings.sendRing)
        recent = Mutex(RecentIds(capacity: settings.dedupeWindow))
    }

    // MARK: tokens

    /// The user of an access token (bare or `Bearer …`), nil when it does not verify.
    func user(ofToken token: String?) async -> UserID? {
        await claims(ofToken: token).flatMap { UserID($0.userId) }
    }

    /// The verified claims of a token (nil: missing, malformed, expired or forged).
    func claims(ofToken token: String?) async -> AccessTokenClaims? {
        guard let token, let bare = bareToken(fromAuthorizationHeader: token) else { return nil }
        return try? await verifier.verify(bare)
    }

    // MARK: follows

    /// Adds a follow; false when the subscriber already follows `follow.id`. The first follower
    /// of a conversation or workspace holds the gateway's interest in it.
    @discardableResult
    func follow(_ subscriber: any LiveSubscriber, _ follow: LiveFollow) -> Bool {
        let key = ObjectIdentifier(subscriber)
        return state.withLock { state in
            guard state.subscribers[key]?.follows[follow.id] == nil else { return false }
            state.subscribers[key, default: Entry(subscriber: subscriber)].follows[follow.id] = follow
            // Interest: a conversation's from its followers, a workspace's from `workspaces`.
            if follow.kind != .workspace, state.followers[follow.id]?.isEmpty ?? true { interest.hold(follow.id) }
            state.followers[follow.id, default: [:]][key] = Follower(subscriber: subscriber, follow: follow)
            state.followerLists[follow.id] = nil
            if let workspace = follow.workspace {
                if state.workspaces[workspace]?.isEmpty ?? true { interest.hold(workspace) }
                state.workspaces[workspace, default: [:]][key, default: 0] += 1
            }
            return true
        }
    }

    /// Returns once the gateway's interest in what `follow` names reached the broker (at most
    /// 2 s): a subscription is confirmed to its client only then, so chat-fanout routes what is
    /// sent after the confirmation here, bar its own lag in reading `gateway.interest.v1`.
    func interestConfirmed(for follow: LiveFollow) async {
        for id in [follow.id, follow.workspace].compactMap({ $0 }) {
            await interest.announced(id, within: .seconds(2))
        }
    }

    /// Drops a follow; the dropped follow, nil when there was none.
    @discardableResult
    func unfollow(_ subscriber: any LiveSubscriber, _ id: UUID) -> LiveFollow? {
        let key = ObjectIdentifier(subscriber)
        return state.withLock { Self.remove(key, id, in: &$0, interest: interest) }
    }

    /// Drops every follow of a subscriber that ended.
    func unfollowAll(_ subscriber: any LiveSubscriber) {
        let key = ObjectIdentifier(subscriber)
        state.withLock { state in
            for id in state.subscribers[key]?.follows.keys.map({ $0 }) ?? [] {
                _ = Self.remove(key, id, in: &state, interest: interest)
            }
        }
    }

    /// What `subscriber` follows.
    func follows(of subscriber: any LiveSubscriber) -> [LiveFollow] {
        state.withLock { $0.subscribers[ObjectIdentifier(subscriber)].map { Array($0.follows.values) } ?? [] }
    }

    private static func remove(_ key: ObjectIdentifier, _ id: UUID, in state: inout State, interest: GatewayInterest) -> LiveFollow? {
        guard let follow = state.subscribers[key]?.follows.removeValue(forKey: id) else { return nil }
        if state.subscribers[key]?.follows.isEmpty ?? true { state.subscribers[key] = nil }
        state.followers[id]?[key] = nil
        state.followerLists[id] = nil
        if state.followers[id]?.isEmpty ?? true {
            state.followers[id] = nil
            if follow.kind != .workspace { interest.release(id) }
        }
        if let workspace = follow.workspace, let count = state.workspaces[workspace]?[key] {
            state.workspaces[workspace]?[key] = count > 1 ? count - 1 : nil
            if state.workspaces[workspace]?.isEmpty ?? true {
                state.workspaces[workspace] = nil
                interest.release(workspace)
            }
        }
        return follow
    }

    var hasFollowers: Bool { state.withLock { !$0.followers.isEmpty } }

    // MARK: delivery

    /// An event from the delivery stream (`id`: its CloudEvents id, which a redelivery repeats),
    /// to the followers it reaches — once. A presence change goes at once to the subscribers that
    /// take each change, and into the next batch for those that take batches.
    func deliver(_ event: LiveEvent, id: UUID) {
        guard recent.withLock({ $0.insert(id) }) else {
            duplicates.increment()
            return
        }
        if case .presence(let change) = event { presenceBatcher.add(change) }
        route(event)
    }

    /// The presence batches gathered since the last flush, each to its workspace's batched
    /// subscribers (`PresenceFlush` calls this one window after the first change).
    /// The write batchers are held meanwhile, so each event loop wakes once per flush.
    func flushPresence() {
        let batches = presenceBatcher.take()
        guard !batches.isEmpty else { return }
        writeBatchers.holding {
            for batch in batches { route(.presenceBatch(batch)) }
        }
    }

    private func route(_ event: LiveEvent) {
        let recipients = state.withLock { state -> [Follower] in
            switch event.route {
            case .followers(let target):
                if let list = state.followerLists[target] { return list }
                guard let followers = state.followers[target] else { return [] }
                let list = Array(followers.values)
                state.followerLists[target] = list
                return list
            case .workspaces(let workspaces):
                // Once per subscriber, however many of the workspaces it shares.
                var seen = Set<ObjectIdentifier>()
                var out: [Follower] = []
                for workspace in workspaces {
                    for key in state.workspaces[workspace]?.keys ?? [:].keys where seen.insert(key).inserted {
                        guard let entry = state.subscribers[key], entry.subscriber.presenceUpdates.takes(event) else { continue }
                        let follow = entry.follows.values.first { $0.workspace == workspace }
                        if let follow { out.append(Follower(subscriber: entry.subscriber, follow: follow)) }
                    }
                }
                return out
            }
        }
        guard !recipients.isEmpty else { return }
        let delivery = LiveDelivery(event)
        var count = 0
        // By index: each follower read in place, not copied out (a retain of its session).
        for index in recipients.indices where event.reaches(recipients[index].follow.userId) {
            recipients[index].subscriber.deliver(delivery, for: recipients[index].follow)
            count += 1
        }
        delivered.increment(by: count)
    }

    // MARK: membership

    /// Someone may no longer read conversations (they left a channel or a workspace, or it was
    /// deleted): the follows of `user` (everyone's when nil, anonymous ones included) of those
    /// conversations — and, with `workspace`, of its DM rooms and of the workspace itself — end,
    /// and each subscriber hears of its own. Anonymous follows carry no user, so only deletions
    /// reach them.
    func revoke(user: UserID?, conversations: [UUID], roomsIn workspace: UUID?) {
        let revoked = state.withLock { state -> [Follower] in
            var found: [Follower] = []
            for conversation in conversations {
                for follower in state.followers[conversation]?.values ?? [:].values where user == nil || follower.follow.userId == user {
                    found.append(follower)
                }
            }
            if let workspace {
                for key in state.workspaces[workspace]?.keys ?? [:].keys {
                    guard let entry = state.subscribers[key] else { continue }
                    for follow in entry.follows.values where user == nil || follow.userId == user {
                        let isRoom = follow.kind == .dm && follow.workspaceId == workspace
                        if isRoom || (follow.kind == .workspace && follow.id == workspace) {
                            found.append(Follower(subscriber: entry.subscriber, follow: follow))
                        }
                    }
                }
            }
            return found.filter { Self.remove(ObjectIdentifier($0.subscriber), $0.follow.id, in: &state, interest: interest) != nil }
        }
        for follower in revoked { follower.subscriber.revoked(follower.follow) }
    }

    // MARK: sessions

    func sessionOpened(_ id: String, user: UserID?, protocol clientProtocol: GatewayEvents.ClientProtocol, device: String? = nil) {
        events.publish(
            GatewayEvents.SessionOpened(
                sessionId: id, gatewayId: settings.gatewayId, userId: user, clientProtocol: clientProtocol, openedAt: Date(),
                gatewayInstance: events.instanceId, device: device
            ))
    }

    func sessionClosed(_ id: String, user: UserID?) {
        events.publishFinal(GatewayEvents.SessionClosed(sessionId: id, gatewayId: settings.gatewayId, userId: user, closedAt: Date()))
    }
}
