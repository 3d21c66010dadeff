/// The contract's linked-list move (client contract §2.1, SGS `locateCategory`): "place the item
/// after `next`; no `next` (the client's `0`) = first". Applied to an ordered list of ids it gives
/// the new order; the caller stores it as dense positions, so there is no cycle to form and no
/// item to lose.
enum Placement {
    enum Failure: Error, Equatable {
        /// `next` is the item itself or not in the target list (SGS 4011) → E11.
        case invalidNext
        /// The item is already right there (SGS 4009) → E12.
        case alreadyLocated
    }

    /// - Parameters:
    ///   - item: the id being moved.
    ///   - next: the id to place it after, or nil for the first place.
    ///   - target: the target list in order (it may or may not contain `item`).
    /// - Returns: the target list with `item` at its new place.
    static func move<ID: Equatable>(_ item: ID, after next: ID?, in target: [ID]) throws(Failure) -> [ID] {
        if let next {
            guard next != item, target.contains(next) else { throw .invalidNext }
        }
        var order = target
        let previousIndex = order.firstIndex(of: item)
        if let previousIndex {
            let alreadyThere = next.map { previousIndex > 0 && order[previousIndex - 1] == $0 } ?? (previousIndex == 0)
            if alreadyThere { throw .alreadyLocated }
            order.remove(at: previousIndex)
        }
        let insertAt = next.flatMap { n in order.firstIndex(of: n).map { $0 + 1 } } ?? 0
        order.insert(item, at: insertAt)
        return order
    }
}
