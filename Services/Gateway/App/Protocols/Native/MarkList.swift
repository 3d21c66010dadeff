import Foundation

/// A native session's resume marks (the message dispatches after `baseSeq`, oldest first) with
/// the set of their message ids, so "was this message already dispatched?" is one lookup. A
/// message reaches a session twice when a resume replayed it from history and its live delivery
/// arrives later (fan-out lags the database), or when the delivery topic redelivers it; the
/// second copy is dropped while the first is still among the marks.
///
/// A full list drops its oldest mark on every new message dispatch, so dropping is O(1): the
/// marks live in `storage` from `start` on, and the dropped prefix is cut off only once it is a
/// quarter as long as what remains (a mark is so moved about four times in all, where
/// `Array.removeFirst` moved all of them — 1 000 marks, 48 KB — on every message dispatch of a
/// session past its first 1 000; the storage holds at most a quarter more than the marks).
struct MarkList: Sendable {
    private var storage: [NativeSession.Mark] = []
    /// The index in `storage` of the oldest mark.
    private var start = 0
    private var messageIds = MessageIdSet()

    init(_ items: [NativeSession.Mark] = []) {
        storage = items
        messageIds = MessageIdSet(items.map(\.messageId))
    }

    /// The marks, oldest first.
    var items: ArraySlice<NativeSession.Mark> { storage[start...] }

    var count: Int { storage.count - start }

    func contains(messageId: UUID) -> Bool { messageIds.contains(messageId) }

    mutating func append(_ mark: NativeSession.Mark) {
        storage.append(mark)
        messageIds.insert(mark.messageId)
    }

    /// Drops and returns the oldest mark; nil when there is none.
    mutating func removeFirst() -> NativeSession.Mark? {
        guard start < storage.count else { return nil }
        let mark = storage[start]
        start += 1
        messageIds.remove(mark.messageId)
        if start >= Self.compactionMinimum, start * 4 >= storage.count - start {
            storage.removeFirst(start)
            start = 0
        }
        return mark
    }

    /// Below this many dropped marks the prefix stays (cutting it costs more than it frees).
    private static let compactionMinimum = 32

    mutating func removeAll(where shouldRemove: (NativeSession.Mark) -> Bool) {
        storage = storage[start...].filter { !shouldRemove($0) }
        start = 0
        messageIds = MessageIdSet(storage.map(\.messageId))
    }
}
