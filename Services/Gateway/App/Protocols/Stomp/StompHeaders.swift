/// An ordered list of STOMP headers that preserves duplicates.
///
/// STOMP 1.2: "If a client or a server receives repeated frame header entries,
/// only the first header entry SHOULD be used as the value of header entry."
/// The lookup ``subscript(_:)`` therefore returns the *first* occurrence, while
/// iteration yields every entry in wire order. Header names are case-sensitive.
struct StompHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    typealias Element = (name: String, value: String)

    /// All entries in wire order, duplicates included.
    private(set) var entries: [Element]

    /// Creates an empty header list.
    init() {
        entries = []
    }

    /// Creates a header list from `(name, value)` pairs, keeping their order.
    init(_ pairs: [(String, String)]) {
        entries = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// Creates a header list from a literal such as `["destination": "/topic/1"]`.
    /// Order is preserved and repeated names are kept.
    init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Number of entries, duplicates included.
    var count: Int { entries.count }

    /// `true` when there are no entries.
    var isEmpty: Bool { entries.isEmpty }

    /// The value of the first entry named `name`, or `nil`.
    ///
    /// Setting a value replaces the first entry in place and removes any later
    /// duplicates (appending if absent); setting `nil` removes every entry named `name`.
    subscript(name: String) -> String? {
        get {
            entries.first { $0.name == name }?.value
        }
        set {
            guard let newValue else {
                removeAll(named: name)
                return
            }
            guard let first = entries.firstIndex(where: { $0.name == name }) else {
                entries.append((name: name, value: newValue))
                return
            }
            entries[first].value = newValue
            var index = entries.index(after: first)
            while index < entries.endIndex {
                if entries[index].name == name {
                    entries.remove(at: index)
                } else {
                    index += 1
                }
            }
        }
    }

    /// Every value for `name`, in wire order.
    func values(for name: String) -> [String] {
        entries.filter { $0.name == name }.map(\.value)
    }

    /// `true` when at least one entry is named `name`.
    func contains(_ name: String) -> Bool {
        entries.contains { $0.name == name }
    }

    /// Appends an entry, even if one with the same name already exists.
    mutating func append(_ name: String, _ value: String) {
        entries.append((name: name, value: value))
    }

    /// Removes every entry named `name`.
    mutating func removeAll(named name: String) {
        entries.removeAll { $0.name == name }
    }

    func makeIterator() -> IndexingIterator<[Element]> {
        entries.makeIterator()
    }

    static func == (lhs: StompHeaders, rhs: StompHeaders) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.name == $1.name && $0.value == $1.value }
    }
}
