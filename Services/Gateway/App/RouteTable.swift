import HTTPTypes

/// Which service owns a `/v1/...` path, and whether the edge requires an access token for it.
/// Patterns: literal segments, `*` (one segment), `**` (the rest, possibly nothing).
struct RouteTable: Sendable {
    enum Upstream: String, Sendable, CaseIterable {
        case auth, workspace, chat, payment, presence
    }

    struct Route: Sendable {
        let methods: Set<HTTPRequest.Method>?
        let segments: [Substring]
        let upstream: Upstream
        let isPublic: Bool
    }

    struct Match: Sendable, Equatable {
        let upstream: Upstream
        let isPublic: Bool
        /// The matched pattern (bounded label for metrics and access logs).
        let pattern: String
    }

    private let routes: [Route]

    init(_ routes: [(HTTPRequest.Method?, String, Upstream, Bool)]) {
        self.routes = routes.map { method, pattern, upstream, isPublic in
            Route(methods: method.map { [$0] }, segments: pattern.split(separator: "/"), upstream: upstream, isPublic: isPublic)
        }
    }

    /// First matching route wins (order: public and specific first).
    func match(method: HTTPRequest.Method, path: String) -> Match? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        for route in routes where route.methods?.contains(method) ?? true {
            if Self.matches(route.segments[...], parts[...]) {
                return Match(upstream: route.upstream, isPublic: route.isPublic, pattern: "/" + route.segments.joined(separator: "/"))
            }
        }
        return nil
    }

    private static func matches(_ pattern: ArraySlice<Substring>, _ path: ArraySlice<Substring>) -> Bool {
        guard let head = pattern.first else { return path.isEmpty }
        if head == "**" { return true }
        guard let segment = path.first else { return false }
        guard head == "*" || head == segment else { return false }
        return matches(pattern.dropFirst(), path.dropFirst())
    }

    /// The suite's routes (client contract §1.2–§1.11).
    static let suite = RouteTable([
        // Public: no access token at the edge.
        (.post, "/v1/users/validation/email", .auth, true),
        (.post, "/v1/users/join", .auth, true),
        (.post, "/v1/users/login", .auth, true),
        (.post, "/v1/users/login/kakao", .auth, true),
        (.post, "/v1/users/login/apple", .auth, true),
        // Refresh carries an expired token on purpose; auth verifies it itself.
        (.get, "/v1/auth/refresh", .auth, true),
        // Authenticated.
        (nil, "/v1/users/**", .auth, false),
        (nil, "/v1/friends", .auth, false),
        (nil, "/v1/friends/**", .auth, false),
        (nil, "/v1/workspaces/*/channels/*/chats", .chat, false),
        (nil, "/v1/workspaces/*/channels/*/chats/**", .chat, false),
        (nil, "/v1/workspaces/*/channels/*/unreads", .chat, false),
        (nil, "/v1/workspaces/*/channels/*/read", .chat, false),
        (nil, "/v1/workspaces/*/chats/search", .chat, false),
        (nil, "/v1/workspaces/*/unreads", .chat, false),
        (nil, "/v1/workspaces/*/dms", .chat, false),
        (nil, "/v1/workspaces/*/dms/**", .chat, false),
        (nil, "/v1/workspaces", .workspace, false),
        (nil, "/v1/workspaces/**", .workspace, false),
        (nil, "/v1/invites/*", .workspace, false),
        (nil, "/v1/store/**", .payment, false),
        (nil, "/v1/static/profiles/**", .auth, false),
        (nil, "/v1/static/workspaces/**", .workspace, false),
        (nil, "/v1/static/**", .chat, false),
    ])
}
