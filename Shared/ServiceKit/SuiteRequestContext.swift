import Events
import Foundation
import Hummingbird

/// JSON coders with the contract's date format (`yyyy-MM-ddTHH:mm:ss.SSSZ`). Keys are never
/// transformed: DTOs spell snake_case ids and camelCase fields explicitly.
public enum SuiteJSON {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .milliseconds
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .milliseconds
        return d
    }
}

/// The request context of every service: the suite's JSON coders, the request id, and the user
/// the gateway authenticated (set by `ForwardedIdentityMiddleware`; protected routes read it
/// from an `AuthenticatedContext`, where it is not optional).
public struct SuiteRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The forwarded user, nil when the request carries none (or not an id).
    public var identity: UserID?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    public var requestDecoder: JSONDecoder { SuiteJSON.decoder() }
    public var responseEncoder: JSONEncoder { SuiteJSON.encoder() }
}
