import Events
import HTTPTypes
import Hummingbird

/// Headers the gateway sets on requests it forwards. Services sit behind the gateway (only the
/// gateway is published), which strips any client-sent copy of these before setting them.
public enum GatewayHeader {
    /// The authenticated user id (from a verified access token).
    public static let userId = HTTPField.Name("X-Chatsuite-User-Id")!
    public static let requestId = HTTPField.Name("X-Request-Id")!
    /// Headers a client may never set itself.
    public static let reserved: [HTTPField.Name] = [userId]
}

extension Request {
    /// The user the gateway authenticated, or E02 when the request carries none.
    public func authenticatedUser() throws -> String {
        guard let id = headers[GatewayHeader.userId], !id.isEmpty else { throw APIError.authenticationFailed }
        return id
    }
}

extension Request {
    /// The authenticated user as a typed id (E02 when missing or not an id).
    public func authenticatedUserID() throws -> UserID {
        guard let id = UserID(try authenticatedUser()) else { throw APIError.authenticationFailed }
        return id
    }
}

extension RequestContext {
    /// A typed id from the route path; one that is not a UUID names nothing (E13).
    public func pathID<Entity>(_ name: String, as: Identifier<Entity>.Type = Identifier<Entity>.self) throws -> Identifier<Entity> {
        guard let id = parameters.get(name).flatMap(Identifier<Entity>.init) else { throw APIError.notFound(name) }
        return id
    }
}
