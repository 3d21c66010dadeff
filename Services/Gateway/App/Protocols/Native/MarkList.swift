import Foundation

/// A native session's resume marks (the message dispatches after `baseSeq`, oldest first) with
/// the set of their message ids, so "was this message already dispatched?" is one lookup. A
/// message reaches a session twice when a resume replayed it from history and its live delivery
/// arrives later (fan-out lags the database), or when the delivery topic redelivers it; the
/// second copy is dropped while the first is still among the marks.
struct MarkList: Sendable {
    private(set) var items: [NativeSession.Mark] = []
    private var messageIds: Set<UUID> = []

    init(_ items: [NativeSession.Mark] = []) {
        self.items = items
        messageIds = Set(items.map(\.messageId))
    }

    var count: Int { items.count }

    func contains(messageId: UUID) -> Bool { messageIds.contains(messageId) }

    mutating func append(_ mark: NativeSession.Mark) {
        items.append(mark)
        messageIds.insert(mark.messageId)
    }

    mutating func removeFirst() -> NativeSession.Mark {
        let mark = items.removeFirst()
        messageIds.remove(mark.messageId)
        return mark
    }

    mutating func removeAll(where shouldRemove: (NativeSession.Mark) -> Bool) {
        items.removeAll(where: shouldRemove)
        messageIds = Set(items.map(\.messageId))
    }
}
