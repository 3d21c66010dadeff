import Foundation
import ServiceKit

/// Settings of `payment` beyond the platform's (docs/configuration.md).
struct PaymentSettings: Sendable {
    /// PortOne (iamport) REST API base, e.g. `https://api.iamport.kr`.
    var portOneURL: String
    /// REST API key and secret of the PortOne account (secrets; empty = validation unavailable).
    var portOneAPIKey: String
    var portOneAPISecret: String
    /// How long one PortOne call may take before the validation answers E99 (503).
    var portOneTimeout: Duration

    init(_ settings: ServiceSettings) throws {
        portOneURL = try settings.string("payment.portone-url")
        while portOneURL.hasSuffix("/") { portOneURL.removeLast() }
        portOneAPIKey = try settings.string("payment.portone-api-key", isSecret: true)
        portOneAPISecret = try settings.string("payment.portone-api-secret", isSecret: true)
        portOneTimeout = .milliseconds(try settings.int("payment.portone-timeout-ms"))
        guard let url = URL(string: portOneURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw StartupError("payment.portone-url must be an http(s) URL (got '\(portOneURL)')")
        }
        guard portOneTimeout >= .milliseconds(100) else { throw StartupError("payment.portone-timeout-ms must be ≥ 100") }
    }

    var portOneConfigured: Bool { !portOneAPIKey.isEmpty && !portOneAPISecret.isEmpty }
}
