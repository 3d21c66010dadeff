import ChatInternalAPI
import Events
import Foundation
import NIOCore
import Synchronization

/// One native session (docs/native-gateway.md): its user, conversations, sequence numbers and
/// resume cursors, and the connection it is attached to (none while detached).
///
/// Resume cursors: `base` holds, per conversation, the last message dispatched with a sequence
/// number ≤ `baseSeq` (or the subscription time); `marks` the message dispatches after it, oldest
/// first, at most `maxMarks` (older ones fold into `base`). The cursor as of any `seq` ≥ `baseSeq`
/// is exact, so a resume replays from history exactly what the client did not receive.
final class NativeSession: Sendable {
    struct Conversation: Sendable {
        var kind: ChatEvents.Conversation.Kind
        /// The workspace, when known (from ready; nil for a later `subscribe`).
        var workspaceId: UUID? = nil
        /// The base cursor: the last dispatched message's time (epoch ms) and whether it is a
        /// message (strictly after) or a subscription time (from it on).
        var cursorMilliseconds: Int64
        var cursorIsMessage: Bool
        var lastTyping: ContinuousClock.Instant?
    }

    struct Mark: Sendable {
        var seq: Int
        var conversationId: UUID
        var createdAtMilliseconds: Int64
        var messageId: UUID
    }

    /// A live dispatch that arrived while a resume was replaying history.
    struct Pending: Sendable {
        var type: String
        var conversationId: UUID
        var messageId: UUID?
        var createdAtMilliseconds: Int64
        /// The payload, encoded once and shared by every session it is dispatched to.
        var json: ByteBuffer
    }

    private struct State: Sendable {
        var seq = 0
        var baseSeq = 0
        var conversations: [UUID: Conversation] = [:]
        var marks = MarkList()
        var connection: LiveConnection?
        var detachedAt: ContinuousClock.Instant?
        var resuming = false
        var pending: [Pending] = []
        var ended = false
    }

    let id: String
    let userId: UserID
    let openedAt: Date
    private let maxMarks: Int
    private let state: Mutex<State>

    init(id: String, userId: UserID, openedAt: Date, maxMarks: Int) {
        self.id = id
        self.userId = userId
        self.openedAt = openedAt
        self.maxMarks = maxMarks
        state = Mutex(State())
    }

    // MARK: conversations

    /// Adds a conversation followed from `milliseconds` on; false when already followed.
    func follow(_ conversation: UUID, kind: ChatEvents.Conversation.Kind, workspace: UUID? = nil, from milliseconds: Int64) -> Bool {
        state.withLock { state in
            guard !state.ended, state.conversations[conversation] == nil else { return false }
            state.conversations[conversation] = Conversation(kind: kind, workspaceId: workspace, cursorMilliseconds: milliseconds, cursorIsMessage: false)
            return true
        }
    }

    /// Stops following a conversation the user may no longer read; queues `conversation.removed`.
    /// False when it was not followed.
    func unfollow(_ conversation: UUID) -> Bool {
        state.withLock { state in
            guard !state.ended, state.conversations.removeValue(forKey: conversation) != nil else { return false }
            state.marks.removeAll { $0.conversationId == conversation }
            state.pending.removeAll { $0.conversationId == conversation }
            guard let connection = state.connection, !state.resuming else { return true }
            _ = connection.send(Self.record(Self.removal(of: conversation), in: &state, maxMarks: maxMarks))
            return true
        }
    }

    /// The `conversation.removed` dispatch.
    private static func removal(of conversation: UUID) -> Pending {
        Pending(
            type: "conversation.removed", conversationId: conversation, messageId: nil, createdAtMilliseconds: 0,
            json: LivePayloads.removal(of: conversation))
    }

    var conversationIds: [UUID] { state.withLock { Array($0.conversations.keys) } }

    /// What the hub is to route to the session (nothing once it ended).
    var follows: [LiveFollow] {
        state.withLock { state in
            state.ended
                ? []
                : state.conversations.map { LiveFollow(id: $0.key, kind: .init($0.value.kind), workspaceId: $0.value.workspaceId, userId: userId) }
        }
    }

    func kind(of conversation: UUID) -> ChatEvents.Conversation.Kind? {
        state.withLock { $0.conversations[conversation]?.kind }
    }

    /// Whether a typing event may be forwarded now (and records it).
    func mayType(in conversation: UUID, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        state.withLock { state in
            guard var entry = state.conversations[conversation] else { return false }
            if let last = entry.lastTyping, now - last < interval { return false }
            entry.lastTyping = now
            state.conversations[conversation] = entry
            return true
        }
    }

    // MARK: connection

    var connection: LiveConnection? { state.withLock { $0.connection } }

    /// Detaches `connection` if it is still the session's; true when it was.
    func detach(_ connection: LiveConnection) -> Bool {
        state.withLock { state in
            guard state.connection === connection else { return false }
            state.connection = nil
            state.detachedAt = .now
            state.resuming = false
            state.pending = []
            return true
        }
    }

    func detachedLongerThan(_ window: Duration, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard let detachedAt = state.detachedAt else { return false }
            return now - detachedAt > window
        }
    }

    /// Marks the session ended (once); returns its conversations to release.
    func end() -> [UUID]? {
        state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            state.connection = nil
            return Array(state.conversations.keys)
        }
    }

    // MARK: dispatch

    /// Dispatches one event: the next sequence number, a resume mark for a message, the frame
    /// queued on the connection. While detached nothing is dispatched (a resume replays messages
    /// from history); while a resume replays, live events wait in `pending`. False when the
    /// connection's queue is full (the caller closes it).
    func dispatch(_ event: Pending) -> Bool {
        // Frames are queued under the session's lock (then the connection's, never the other
        // way round), so their order on the connection is their sequence order.
        state.withLock { state in
            guard !state.ended, let connection = state.connection else { return true }
            if state.resuming {
                state.pending.append(event)
                return true
            }
            // Already dispatched (replayed by a resume, or redelivered): once is enough.
            if let messageId = event.messageId, state.marks.contains(messageId: messageId) { return true }
            return connection.send(Self.record(event, in: &state, maxMarks: maxMarks))
        }
    }

    /// The next sequence number and its frame; a message also moves its conversation's marks.
    private static func record(_ event: Pending, in state: inout State, maxMarks: Int) -> OutboundText {
        state.seq += 1
        if let messageId = event.messageId, state.conversations[event.conversationId] != nil {
            state.marks.append(
                Mark(seq: state.seq, conversationId: event.conversationId, createdAtMilliseconds: event.createdAtMilliseconds, messageId: messageId))
            if state.marks.count > maxMarks, let folded = state.marks.removeFirst() {
                state.baseSeq = folded.seq
                state.conversations[folded.conversationId]?.cursorMilliseconds = folded.createdAtMilliseconds
                state.conversations[folded.conversationId]?.cursorIsMessage = true
            }
        }
        return NativeFrames.dispatch(type: event.type, seq: state.seq, json: event.json)
    }

    /// Attaches the identifying connection and queues the ready dispatch (sequence number 1).
    func attachReady(_ connection: LiveConnection, json: String) -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            state.connection = connection
            state.seq = 1
            return connection.send(NativeFrames.dispatch(type: "ready", seq: 1, json: json))
        }
    }

    // MARK: resume

    enum ResumeStart: Sendable {
        /// Per conversation: replay strictly after this time (epoch ms); and the connection the
        /// resume replaced (to be closed).
        case cursors([(UUID, Int64)], replaced: LiveConnection?)
        case seqAhead
        case tooOld
        case ended
    }

    /// Starts a resume from `seq` on `connection`: attaches it, forgets the dispatches after `seq`
    /// (they are replayed), returns the cursors to replay from, and holds live events until
    /// `finishResume`.
    func beginResume(from seq: Int, on connection: LiveConnection) -> ResumeStart {
        state.withLock { state in
            guard !state.ended else { return .ended }
            guard seq <= state.seq else { return .seqAhead }
            guard seq >= state.baseSeq else { return .tooOld }
            let replaced = state.connection
            state.connection = connection
            state.detachedAt = nil
            state.marks.removeAll { $0.seq > seq }
            state.seq = seq
            var cursors: [UUID: (Int64, Bool)] = state.conversations.mapValues { ($0.cursorMilliseconds, $0.cursorIsMessage) }
            for mark in state.marks.items { cursors[mark.conversationId] = (mark.createdAtMilliseconds, true) }
            state.resuming = true
            state.pending = []
            // Chat replays strictly after a time: a subscription time t means "from t on", i.e. after t − 1.
            return .cursors(cursors.map { ($0.key, $0.value.1 ? $0.value.0 : $0.value.0 - 1) }, replaced: replaced === connection ? nil : replaced)
        }
    }

    /// Stops following the conversations the user can no longer read (`conversation.removed`
    /// each), dispatches the replayed messages, then the edits and deletions of older messages,
    /// then `resumed`, then the live events that arrived meanwhile (those the replay did not
    /// already contain). False when the queue overflowed.
    func finishResume(replayed: [ChatInternal.ReplayedMessage], changes: [ChatInternal.ReplayedChange] = [], removed: [UUID]) -> Bool {
        state.withLock { state in
            guard !state.ended, let connection = state.connection, state.resuming else { return true }
            var frames: [OutboundText] = []
            frames.reserveCapacity(removed.count + replayed.count + changes.count + state.pending.count + 1)
            for conversation in removed where state.conversations.removeValue(forKey: conversation) != nil {
                state.marks.removeAll { $0.conversationId == conversation }
                state.pending.removeAll { $0.conversationId == conversation }
                frames.append(Self.record(Self.removal(of: conversation), in: &state, maxMarks: maxMarks))
            }
            var seen = Set<UUID>()
            for message in replayed {
                seen.insert(message.messageId)
                frames.append(
                    Self.record(
                        Pending(
                            type: message.type, conversationId: message.conversationId, messageId: message.messageId,
                            createdAtMilliseconds: message.createdAtMilliseconds, json: ByteBuffer(string: message.json)),
                        in: &state, maxMarks: maxMarks
                    ))
            }
            // Edits and deletions of messages the client already had (state: at least once).
            for change in changes where state.conversations[change.conversationId] != nil {
                frames.append(
                    Self.record(
                        Pending(
                            type: change.type, conversationId: change.conversationId, messageId: nil, createdAtMilliseconds: 0,
                            json: ByteBuffer(string: change.json)),
                        in: &state, maxMarks: maxMarks
                    ))
            }
            frames.append(OutboundText(NativeFrames.resumed(sessionId: id, replayed: replayed.count + changes.count)))
            for event in state.pending where event.messageId.map({ !seen.contains($0) }) ?? true {
                frames.append(Self.record(event, in: &state, maxMarks: maxMarks))
            }
            state.pending = []
            state.resuming = false
            return connection.send(contentsOf: FrameList(frames))
        }
    }

    // MARK: checkpoints

    /// - Parameter instance: the gateway process, when the session is attached there.
    func checkpoint(gatewayId: String, attachedAt instance: String?) -> GatewayEvents.SessionCheckpoint {
        state.withLock { state in
            GatewayEvents.SessionCheckpoint(
                sessionId: id, gatewayId: gatewayId, userId: userId, openedAt: openedAt, seq: state.seq, baseSeq: state.baseSeq,
                conversations: state.conversations.map { id, conversation in
                    GatewayEvents.ConversationCursor(
                        conversationId: id, kind: conversation.kind, createdAt: Date(milliseconds: conversation.cursorMilliseconds),
                        afterMessage: conversation.cursorIsMessage, workspaceId: conversation.workspaceId
                    )
                },
                marks: state.marks.items.map {
                    GatewayEvents.DispatchMark(
                        seq: $0.seq, conversationId: $0.conversationId, createdAt: Date(milliseconds: $0.createdAtMilliseconds),
                        messageId: MessageID($0.messageId))
                },
                checkpointedAt: Date(), attached: instance != nil, gatewayInstance: instance
            )
        }
    }

    /// A session rebuilt from a checkpoint (on another gateway, or after a restart), detached.
    convenience init(checkpoint: GatewayEvents.SessionCheckpoint, maxMarks: Int) {
        self.init(id: checkpoint.sessionId, userId: checkpoint.userId, openedAt: checkpoint.openedAt, maxMarks: maxMarks)
        state.withLock { state in
            state.seq = checkpoint.seq
            state.baseSeq = checkpoint.baseSeq
            for cursor in checkpoint.conversations {
                state.conversations[cursor.conversationId] = Conversation(
                    kind: cursor.kind, workspaceId: cursor.workspaceId, cursorMilliseconds: Timestamp.milliseconds(cursor.createdAt),
                    cursorIsMessage: cursor.afterMessage
                )
            }
            state.marks = MarkList(
                checkpoint.marks.map {
                    Mark(
                        seq: $0.seq, conversationId: $0.conversationId, createdAtMilliseconds: Timestamp.milliseconds($0.createdAt),
                        messageId: $0.messageId.uuid)
                })
            state.detachedAt = .now
        }
    }
}

extension Date {
    /// The date of epoch milliseconds (`Timestamp.milliseconds` gives them back exactly).
    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension NativeSession: LiveSubscriber {
    /// `presence.batch`: a workspace's changes of one window in one dispatch.
    var presenceUpdates: PresenceUpdates { .batched }

    /// A dispatch of the event's type around its shared payload; a new message also moves the
    /// conversation's resume marks. A connection whose queue is full closes with 4011 (resume).
    /// A presence batch naming the session's own user is written without that user's change.
    func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
        let event = delivery.event
        let created = event.createdMessage
        var json: ByteBuffer {
            if case .presenceBatch(let batch) = event, batch.names(userId) { return LivePayloads.presenceBatch(batch, excluding: userId) }
            return delivery.payload
        }
        let pending = Pending(
            type: event.dispatchType, conversationId: follow.id, messageId: created?.id,
            createdAtMilliseconds: created.map { Timestamp.milliseconds($0.createdAt) } ?? 0, json: json)
        if !dispatch(pending) {
            connection?.closeNow(code: NativeClose.tooSlow, reason: "too far behind: resume")
        }
    }

    /// `conversation.removed` (queued by `unfollow`).
    func revoked(_ follow: LiveFollow) {
        _ = unfollow(follow.id)
    }
}
