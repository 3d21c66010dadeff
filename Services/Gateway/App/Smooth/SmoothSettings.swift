import ServiceKit

/// Smooth's REST surface at the edge (docs/smooth-api.md): where its three servers' paths live,
/// and whether its token-less history reads are served.
struct SmoothSettings: Sendable {
    /// A Smooth server: its public prefix and the internal path the services serve it under.
    struct Surface: Sendable {
        let prefix: String
        let internalPrefix: String
        let errors: SmoothErrorMiddleware<GatewayRequestContext>.Surface
    }

    var surfaces: [Surface]
    /// `gateway.smooth.anonymous-history`: Smooth's client reads chat history without a token;
    /// when true such reads are served (a token, when sent, is still checked); when false the
    /// edge answers 401 to them.
    var anonymousHistory: Bool
    /// `gateway.public-url`: the gateway's URL as clients reach it (Smooth's sign-in returns it as
    /// the chat server's `url`); empty = `http://` + the request's Host.
    var publicURL: String
    /// The prefixes as services read them (`GatewayHeader.smoothPrefixes`).
    var prefixesHeader: String
    /// `gateway.smooth.chat-prefix`: STOMP frames link attachments under it.
    var chatPrefix: String { surfaces.first { $0.internalPrefix == "/smooth/chat" }?.prefix ?? "/chat-server" }

    init(_ settings: ServiceSettings) throws {
        func prefix(_ key: String) throws -> String {
            let value = try settings.string(key)
            let trimmed = value.hasSuffix("/") ? String(value.dropLast()) : value
            guard trimmed.hasPrefix("/"), trimmed.count > 1, !trimmed.hasPrefix("/v1"), !trimmed.dropFirst().contains("/") else {
                throw StartupError("\(key) must be one path segment such as /auth-server (not under /v1), not \(value)")
            }
            return trimmed
        }
        surfaces = [
            Surface(prefix: try prefix("gateway.smooth.auth-prefix"), internalPrefix: "/smooth/auth", errors: .authAndChat),
            Surface(prefix: try prefix("gateway.smooth.community-prefix"), internalPrefix: "/smooth/community", errors: .community),
            Surface(prefix: try prefix("gateway.smooth.chat-prefix"), internalPrefix: "/smooth/chat", errors: .authAndChat),
        ]
        guard Set(surfaces.map(\.prefix)).count == surfaces.count else { throw StartupError("gateway.smooth.*-prefix must differ") }
        prefixesHeader = SmoothServer.header([.auth: surfaces[0].prefix, .community: surfaces[1].prefix, .chat: surfaces[2].prefix])
        anonymousHistory = try settings.bool("gateway.smooth.anonymous-history")
        let url = try settings.string("gateway.public-url")
        guard url.isEmpty || url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw StartupError("gateway.public-url must be empty or an http(s) URL, not \(url)")
        }
        publicURL = url.hasSuffix("/") ? String(url.dropLast()) : url
    }
}
