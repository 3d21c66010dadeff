import Hummingbird

extension Request {
    /// The gateway's URL as the client reached it (the edge forwards it in `X-Chatsuite-Public-URL`,
    /// without a trailing slash); a direct call falls back to `http://` + Host. Smooth's answers
    /// carry absolute URLs (sign-in's `url`, invitation links, images its client loads by URL).
    public var smoothPublicURL: String {
        if let url = headers[GatewayHeader.publicURL], !url.isEmpty { return url.hasSuffix("/") ? String(url.dropLast()) : url }
        return head.authority.map { "http://" + $0 } ?? ""
    }
}

/// Smooth's three servers, each served by the gateway under a prefix of its own
/// (`gateway.smooth.*-prefix`).
public enum SmoothServer: String, CaseIterable, Sendable {
    case auth, community, chat

    /// The prefix when the request did not come through the edge (the defaults).
    public var defaultPrefix: String { "/\(rawValue)-server" }

    /// The header value the edge forwards for these prefixes.
    public static func header(_ prefixes: [SmoothServer: String]) -> String {
        allCases.map { "\($0.rawValue)=\(prefixes[$0] ?? $0.defaultPrefix)" }.joined(separator: ";")
    }
}

extension Request {
    /// The public prefix of one of Smooth's servers, as the edge forwarded it.
    public func smoothPrefix(_ server: SmoothServer) -> String {
        for entry in (headers[GatewayHeader.smoothPrefixes] ?? "").split(separator: ";") {
            let pair = entry.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0] == server.rawValue, pair[1].hasPrefix("/") { return String(pair[1]) }
        }
        return server.defaultPrefix
    }
}

/// Absolute URLs in Smooth's answers (its client loads images by URL, without a token).
public enum SmoothURL {
    /// A profile image as auth's events carry it: absolute ones as they are, the suite's relative
    /// `/static/profiles/...` paths where auth serves them without a token
    /// (`<public-url><auth prefix>/static/profiles/...`).
    public static func profileImage(_ path: String?, _ request: Request) -> String? {
        guard let path, !path.isEmpty else { return nil }
        if path.hasPrefix("http://") || path.hasPrefix("https://") { return path }
        return request.smoothPublicURL + request.smoothPrefix(.auth) + (path.hasPrefix("/") ? path : "/" + path)
    }
}
