import Events
import Foundation
import Synchronization

/// The send contexts (`ChannelSendContext`) of recent senders, so a sender's next send to a
/// channel skips the read: the one statement that stores it checks everything a context holds
/// (`InsertChannelMessageDirectly`), so a stale context costs one refused statement and the
/// transactional path, never a wrong message. What a kept context decides alone is the cheap
/// membership check before an upload is read: for at most `lifetime` after it was read, a sender
/// who just left the channel has their form read before it is refused (E13), as when they leave
/// during the send. Bounded: when `capacity` contexts are kept, expired ones are dropped, and all
/// of them if none has expired.
final class SendContextCache: Sendable {
    struct Key: Hashable, Sendable {
        var channel: ChannelID
        var workspace: WorkspaceID
        var user: UserID
    }

    private struct Entry {
        var context: ChannelSendContext
        var readAt: ContinuousClock.Instant
    }

    let capacity: Int
    let lifetime: Duration
    private let entries = Mutex<[Key: Entry]>([:])

    init(capacity: Int = 50_000, lifetime: Duration = .seconds(60)) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// The context kept for `key`, unless it is older than `lifetime`.
    func context(for key: Key) -> ChannelSendContext? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard now - entry.readAt < lifetime else {
                entries[key] = nil
                return nil
            }
            return entry.context
        }
    }

    /// Keeps a context just read.
    func keep(_ context: ChannelSendContext, for key: Key) {
        let now = ContinuousClock.now
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity {
                entries = entries.filter { now - $0.value.readAt < lifetime }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[key] = Entry(context: context, readAt: now)
        }
    }

    /// The channel's clock moved to `time` (epoch milliseconds) with a send of `key`'s sender.
    func advance(_ key: Key, to time: Int64) {
        entries.withLock { entries in
            guard let last = entries[key]?.context.lastMessage, last >= time else {
                entries[key]?.context.lastMessage = time
                return
            }
        }
    }

    /// Drops `key`'s context (its statement wrote nothing: something it holds changed).
    func forget(_ key: Key) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// How many contexts are kept (tests).
    var count: Int { entries.withLock { $0.count } }
}
