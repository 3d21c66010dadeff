import Events
import Foundation
import ServiceLifecycle
import Synchronization

/// The presence changes of one workspace within one batching window: each user's latest, in the
/// order the users first changed. One event for every native session of the workspace, so a
/// burst of n members coming online costs each session a few frames, not n
/// (docs/native-gateway.md, `presence.batch`).
struct PresenceBatch: Sendable {
    let workspaceId: UUID
    let changes: [PresenceEvents.StatusChanged]
    /// The users of `changes`.
    let users: Set<UserID>

    init(workspaceId: UUID, changes: [PresenceEvents.StatusChanged]) {
        self.workspaceId = workspaceId
        self.changes = changes
        users = Set(changes.map(\.userId))
    }

    /// Whether `user`'s own change is in the batch (a session is never told about its own user).
    func names(_ user: UserID) -> Bool {
        users.contains(user)
    }

    /// Whether the batch is about `user` alone (nothing for that user's sessions).
    func isOnly(_ user: UserID) -> Bool {
        users.count == 1 && users.contains(user)
    }
}

/// Gathers presence changes per workspace until the hub's flush (`PresenceFlush`, every
/// `gateway.realtime.presence-batch-ms` while changes wait): a user's later change replaces the
/// earlier one, and a workspace's batch holds at most `maxChanges` (more: several batches).
final class PresenceBatcher: Sendable {
    /// At most this many changes in one batch (~60 KiB of JSON).
    static let maxChanges = 500

    private struct Pending {
        var changes: [PresenceEvents.StatusChanged] = []
        var index: [UserID: Int] = [:]

        /// A user's later change replaces the earlier one in place.
        mutating func add(_ change: PresenceEvents.StatusChanged) {
            if let at = index[change.userId] {
                changes[at] = change
            } else {
                index[change.userId] = changes.count
                changes.append(change)
            }
        }
    }

    private struct State {
        var pending: [UUID: Pending] = [:]
        /// Workspaces in the order their first change arrived.
        var order: [UUID] = []
        /// Whether the flush loop was woken for what is pending.
        var woken = false
    }

    private let state = Mutex(State())
    let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() {
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Adds a change to each of its workspaces' pending batch.
    func add(_ change: PresenceEvents.StatusChanged) {
        guard !change.workspaceIds.isEmpty else { return }
        let wakeUp = state.withLock { state in
            for workspace in change.workspaceIds.map(\.uuid) {
                if state.pending[workspace] == nil { state.order.append(workspace) }
                state.pending[workspace, default: Pending()].add(change)
            }
            defer { state.woken = true }
            return !state.woken
        }
        if wakeUp { wake.yield() }
    }

    /// Everything pending, as batches (a workspace's in order, split at `maxChanges`).
    func take() -> [PresenceBatch] {
        let (pending, order) = state.withLock { state in
            defer { state = State() }
            return (state.pending, state.order)
        }
        return order.flatMap { workspace -> [PresenceBatch] in
            let changes = pending[workspace]?.changes ?? []
            return stride(from: 0, to: changes.count, by: Self.maxChanges).map {
                PresenceBatch(workspaceId: workspace, changes: Array(changes[$0..<min($0 + Self.maxChanges, changes.count)]))
            }
        }
    }

    /// Ends the flush loop's stream.
    func finish() {
        wake.finish()
    }
}

/// The hub's presence flush loop: woken by the first change after a flush, it waits one window,
/// then delivers what gathered (`RealtimeHub.flushPresence`). Ends at graceful shutdown.
struct PresenceFlush: Service {
    let hub: RealtimeHub
    let window: Duration

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            for await _ in hub.presenceBatcher.wakes {
                try await Task.sleep(for: window)
                hub.flushPresence()
            }
        }
    }
}
