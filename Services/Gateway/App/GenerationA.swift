import HTTPTypes
import ServiceCatalog

/// Which generation of the SeSAC workspace API a `/v1` request speaks (client contract §1.9,
/// docs/generation-a.md). Gen A (Lilac, January–March 2024) shares most paths with Gen B but
/// answers with integer ids, channels addressed by name and other shapes; the services serve
/// it under `/gena/v1/...` (the catalog's routes say which service owns which path).
///
/// - A path only Gen A has (`/v1/users/my`, `…/leave`, `…/change/admin/{user}`, `…/channels/my`)
///   is Gen A whatever the key.
/// - A path both have is Gen A when the request's `SesacKey` is one of
///   `sesac.generation-a-keys`, else Gen B.
/// - A Gen A request for a path no service serves under `/gena` (static files, refresh, email
///   validation: the same in both) goes to the Gen B route.
public enum GenerationA {
    static let prefix = "/gena"

    /// Path patterns (`*`: one segment) only Gen A has.
    static let ownPaths: [[Substring]] = [
        "/v1/users/my", "/v1/users/my/image", "/v1/workspaces/*/leave", "/v1/workspaces/*/change/admin/*",
        "/v1/workspaces/*/channels/my", "/v1/workspaces/*/channels/*/leave", "/v1/workspaces/*/channels/*/change/admin/*",
    ].map { $0.split(separator: "/") }

    public static func isOwnPath(_ path: String) -> Bool {
        let parts = path.split(separator: "/")
        return ownPaths.contains { pattern in
            pattern.count == parts.count && zip(pattern, parts).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    /// The path to route and forward: `/gena` + the path for a Gen A request a service serves
    /// as Gen A, else the path unchanged.
    static func upstreamPath(_ method: HTTPRequest.Method, _ path: String, keySpeaksGenerationA: Bool, _ routes: RouteTable) -> String {
        guard keySpeaksGenerationA || isOwnPath(path) else { return path }
        let generationA = prefix + path
        return routes.match(method: method, path: generationA) != nil ? generationA : path
    }
}
