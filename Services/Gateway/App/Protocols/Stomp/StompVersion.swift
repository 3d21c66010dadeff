/// Protocol versions this codec speaks. STOMP 1.0 is deliberately not supported.
enum StompVersion: String, Sendable, CaseIterable {
    case v1_1 = "1.1"
    case v1_2 = "1.2"

    /// Value for the `version` header of an ERROR frame refusing a client
    /// that offers no supported version.
    static let supportedHeaderValue = "1.1,1.2"

    /// Picks the version to answer in CONNECTED from a CONNECT `accept-version` value.
    ///
    /// Returns ``v1_2`` if offered, else ``v1_1`` if offered, else `nil`
    /// (refuse the connection). An absent header means the client only speaks
    /// 1.0, so `nil` is also returned for `nil`. Entries are comma-separated;
    /// surrounding spaces are ignored.
    static func negotiate(acceptVersion: String?) -> StompVersion? {
        guard let acceptVersion else { return nil }
        let offered = Set(
            acceptVersion.split(separator: ",").map { entry in
                var trimmed = entry.drop { $0 == " " }
                while trimmed.last == " " { trimmed = trimmed.dropLast() }
                return String(trimmed)
            })
        return allCases.reversed().first { offered.contains($0.rawValue) }
    }
}
