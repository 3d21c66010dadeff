import HTTPTypes
import ServiceCatalog

/// Which service owns a `/v1/...` path, and whether the edge requires an access token for it,
/// built from the routes each catalog entry declares (`ServiceEntry.routes`).
///
/// Patterns: literal segments, `*` (one segment), `**` (the rest, possibly nothing). Of the
/// patterns matching a path, the most specific wins: compared segment by segment, a literal beats
/// `*`, `*` beats the pattern's end, the end beats `**`; at equal patterns a route for the method
/// beats one for any method. Routes are sorted by that order once, so the first match is the
/// most specific one.
struct RouteTable: Sendable {
    struct Route: Sendable {
        let methods: Set<HTTPRequest.Method>?
        let segments: [Substring]
        let upstream: String
        let isPublic: Bool
        let isAnonymousCompatible: Bool
    }

    struct Match: Sendable, Equatable {
        /// The catalog name of the service (`ServiceEntry.name`).
        let upstream: String
        let isPublic: Bool
        /// See `ServiceEntry.Route.isAnonymousCompatible`.
        var isAnonymousCompatible = false
        /// The matched pattern (bounded label for metrics and access logs).
        let pattern: String
    }

    private let routes: [Route]

    init(_ services: [ServiceEntry]) {
        var routes: [Route] = []
        for service in services {
            for route in service.routes {
                routes.append(
                    Route(
                        methods: route.method.flatMap { HTTPRequest.Method($0) }.map { [$0] },
                        segments: route.pattern.split(separator: "/"), upstream: service.name, isPublic: route.isPublic,
                        isAnonymousCompatible: route.isAnonymousCompatible
                    ))
            }
        }
        self.routes = routes.sorted(by: Self.isMoreSpecific)
    }

    /// The most specific route that matches, if any.
    func match(method: HTTPRequest.Method, path: String) -> Match? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        for route in routes where route.methods?.contains(method) ?? true {
            if Self.matches(route.segments[...], parts[...]) {
                return Match(
                    upstream: route.upstream, isPublic: route.isPublic, isAnonymousCompatible: route.isAnonymousCompatible,
                    pattern: "/" + route.segments.joined(separator: "/"))
            }
        }
        return nil
    }

    /// Routes with the same pattern and method in two services: the catalog is ambiguous.
    var conflicts: [String] {
        var seen: [String: String] = [:]
        var conflicts: [String] = []
        for route in routes {
            let key = "\(route.methods.map { $0.map(\.rawValue).sorted().joined(separator: ",") } ?? "*") /\(route.segments.joined(separator: "/"))"
            if let other = seen[key], other != route.upstream {
                conflicts.append("\(key): \(other) and \(route.upstream)")
            }
            seen[key] = route.upstream
        }
        return conflicts
    }

    private static func matches(_ pattern: ArraySlice<Substring>, _ path: ArraySlice<Substring>) -> Bool {
        guard let head = pattern.first else { return path.isEmpty }
        if head == "**" { return true }
        guard let segment = path.first else { return false }
        guard head == "*" || head == segment else { return false }
        return matches(pattern.dropFirst(), path.dropFirst())
    }

    /// Rank of a pattern position: literal 0, `*` 1, end of pattern 2, `**` 3.
    private static func rank(_ segments: [Substring], _ index: Int) -> Int {
        guard index < segments.count else { return 2 }
        switch segments[index] {
        case "**": return 3
        case "*": return 1
        default: return 0
        }
    }

    private static func isMoreSpecific(_ a: Route, _ b: Route) -> Bool {
        for index in 0...max(a.segments.count, b.segments.count) {
            let (ra, rb) = (rank(a.segments, index), rank(b.segments, index))
            if ra != rb { return ra < rb }
            if ra == 2 || ra == 3 { break }
            // Two literals that differ never match the same path; any order will do.
            if ra == 0, a.segments[index] != b.segments[index] { return a.segments[index] < b.segments[index] }
        }
        return a.methods != nil && b.methods == nil
    }

    /// The suite's routes (client contract §1.2–§1.11), from the catalog.
    static let suite = RouteTable(ServiceEntry.all)
}
