import Events
import Foundation
import Hummingbird

/// The context of routes that need the user the gateway authenticated: the identity is not
/// optional here. Mount protected routes with `router.group(path, context: AuthenticatedContext.self)`;
/// a request without a (valid) forwarded identity never reaches them and gets E02.
public struct AuthenticatedContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The user the request acts as.
    public let identity: UserID

    public init(context: SuiteRequestContext) throws {
        guard let identity = context.identity else { throw APIError.authenticationFailed }
        self.coreContext = context.coreContext
        self.identity = identity
    }

    public var requestDecoder: JSONDecoder { SuiteJSON.decoder() }
    public var responseEncoder: JSONEncoder { SuiteJSON.encoder() }
}
