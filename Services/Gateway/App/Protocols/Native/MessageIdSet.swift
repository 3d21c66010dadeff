import Foundation

/// The message ids among a native session's resume marks (`MarkList`): asked once per message
/// dispatch, added to and dropped from once each. A `Set<UUID>` hashed every id with SipHash
/// (a `Hasher` seeded, fed 16 bytes and finalised per lookup, insert and removal: 2 % of a native
/// run's gateway samples, docs/benchmarks.md, part 46). Here an id's two halves, folded and
/// multiplied by a Fibonacci constant, pick the slot of an open-addressed table (linear probing,
/// at most half full; a removal shifts the probe run back, so no tombstones pile up).
///
/// The ids are the suite's message ids, made by chat (random bits in both halves), never a
/// client's choice. Ids chosen to collide would only lengthen probe runs within one session's
/// table, whose size is bounded by its marks (`native.max-marks`).
struct MessageIdSet: Sendable {
    private var slots: [UUID?]
    private var mask: Int
    private var shift: UInt64
    private(set) var count = 0

    /// Empty, with no table until the first insert (an idle session's marks are empty).
    init() {
        slots = []
        mask = 0
        shift = 0
    }

    init(_ ids: some Sequence<UUID>) {
        self.init()
        for id in ids { insert(id) }
    }

    private static let minimumCapacity = 16

    func contains(_ id: UUID) -> Bool {
        guard count > 0 else { return false }
        var index = home(id)
        while let present = slots[index] {
            if present == id { return true }
            index = (index + 1) & mask
        }
        return false
    }

    /// Adds `id`; false when it was present.
    @discardableResult
    mutating func insert(_ id: UUID) -> Bool {
        if (count + 1) * 2 > slots.count { grow() }
        var index = home(id)
        while let present = slots[index] {
            if present == id { return false }
            index = (index + 1) & mask
        }
        slots[index] = id
        count += 1
        return true
    }

    /// Drops `id`; false when it was not present.
    @discardableResult
    mutating func remove(_ id: UUID) -> Bool {
        guard count > 0 else { return false }
        var hole = home(id)
        while true {
            guard let present = slots[hole] else { return false }
            if present == id { break }
            hole = (hole + 1) & mask
        }
        slots[hole] = nil
        count -= 1
        // Backward shift: every later id of the probe run whose home is not between the hole and
        // its own slot (cyclically) moves into the hole, so each id stays reachable from its home.
        var next = (hole + 1) & mask
        while let moved = slots[next] {
            let wanted = home(moved)
            let stays = hole <= next ? (hole < wanted && wanted <= next) : (hole < wanted || wanted <= next)
            if !stays {
                slots[hole] = moved
                slots[next] = nil
                hole = next
            }
            next = (next + 1) & mask
        }
        return true
    }

    private func home(_ id: UUID) -> Int {
        let folded = withUnsafeBytes(of: id.uuid) { raw in
            raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self) ^ raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        }
        return Int(truncatingIfNeeded: (folded &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    private mutating func grow() {
        let old = slots
        let capacity = max(Self.minimumCapacity, old.count * 2)
        slots = Array(repeating: nil, count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        count = 0
        for case let id? in old { insert(id) }
    }
}
