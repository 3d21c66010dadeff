import Events
import HTTPTypes
import Hummingbird

/// Headers the gateway sets on requests it forwards. Services sit behind the gateway (only the
/// gateway is published), which strips any client-sent copy of these before setting them.
public enum GatewayHeader {
    /// The authenticated user id (from a verified access token).
    public static let userId = HTTPField.Name("X-Chatsuite-User-Id")!
    public static let requestId = HTTPField.Name("X-Request-Id")!
    /// The gateway's URL as the client reached it (legacy answers that name the server, such as
    /// Smooth's sign-in `url`).
    public static let publicURL = HTTPField.Name("X-Chatsuite-Public-URL")!
    /// Where the gateway serves Smooth's three servers (`auth=/auth-server;community=…;chat=…`),
    /// so services build absolute URLs under the prefixes the client uses (`Request.smoothPrefix`).
    public static let smoothPrefixes = HTTPField.Name("X-Chatsuite-Smooth-Prefixes")!
    /// Headers a client may never set itself.
    public static let reserved: [HTTPField.Name] = [userId, publicURL, smoothPrefixes]
}

extension RequestContext {
    /// A typed id from the route path; one that is not a UUID names nothing (E13).
    public func pathID<Entity>(_ name: String, as: Identifier<Entity>.Type = Identifier<Entity>.self) throws -> Identifier<Entity> {
        guard let id = parameters.get(name).flatMap(Identifier<Entity>.init) else { throw APIError.notFound(name) }
        return id
    }
}

/// The one place a service reads the identity the gateway forwarded: puts the `X-Chatsuite-User-Id`
/// of the request into `SuiteRequestContext.identity` (nil when absent, empty or not an id). It
/// refuses nothing itself: routes that need a user sit in an `AuthenticatedContext` group, which
/// answers E02 when there is none.
public struct ForwardedIdentityMiddleware: RouterMiddleware {
    public typealias Context = SuiteRequestContext

    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.identity = request.headers[GatewayHeader.userId].flatMap(UserID.init)
        return try await next(request, context)
    }
}
