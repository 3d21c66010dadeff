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

/// The request context of every service: the suite's JSON coders and the request id.
public struct SuiteRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    public var requestDecoder: JSONDecoder { SuiteJSON.decoder() }
    public var responseEncoder: JSONEncoder { SuiteJSON.encoder() }
}
