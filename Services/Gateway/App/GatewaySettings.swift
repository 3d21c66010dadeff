import Foundation
import ServiceCatalog
import ServiceKit

/// Settings of the gateway beyond the platform's (docs/configuration.md).
struct GatewaySettings: Sendable {
    /// App keys accepted in the `SesacKey` header. Secret.
    var sesacKeys: Set<String>
    /// The keys (of `sesacKeys`) whose apps speak Gen A of the SeSAC workspace API (Lilac,
    /// contract §1.9) where its paths are also Gen B's. Secret.
    var generationAKeys: Set<String>
    var jwtPublicKeyPEM: String
    var audience: String
    var issuer: String
    /// Base URL of each routed service, by catalog name (`ServiceEntry.upstreams`).
    var upstreams: [String: String]
    var userRatePerSecond: Double
    var userBurst: Double
    var addressRatePerSecond: Double
    var addressBurst: Double
    /// Limit of a `multipart/form-data` body (files).
    var maxBodyBytes: Int
    /// Limit of every other body (JSON, forms): no client sends more than a message's text.
    var maxPlainBodyBytes: Int
    var upstreamTimeoutSeconds: Int
    /// HTTP/1.1 connections the gateway may hold to each service (`gateway.upstream-connections`).
    var upstreamConnections: Int
    /// How often the gateway announces itself (`gateway.alive`) for presence.
    var livenessIntervalMilliseconds: Int
    /// Load balancers whose `X-Forwarded-For` names the client (`gateway.trusted-proxies`).
    var trustedProxies: TrustedProxies

    init(_ settings: ServiceSettings) throws {
        let keys = try settings.string("sesac.keys", isSecret: true).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        sesacKeys = Set(keys.filter { !$0.isEmpty })
        guard !sesacKeys.isEmpty else { throw StartupError("sesac.keys (SESAC_KEYS) must list at least one app key") }
        let generationA = try settings.string("sesac.generation-a-keys", isSecret: true).split(separator: ",")
        generationAKeys = Set(generationA.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        guard generationAKeys.isSubset(of: sesacKeys) else {
            throw StartupError("sesac.generation-a-keys (SESAC_GENERATION_A_KEYS) may list only keys of sesac.keys")
        }
        jwtPublicKeyPEM = try settings.secretText("jwt.public-key")
        audience = try settings.string("jwt.audience")
        issuer = try settings.string("jwt.issuer")
        var upstreams: [String: String] = [:]
        for upstream in ServiceEntry.upstreams {
            let url = try settings.string(upstream.urlSetting)
            guard let parsed = URL(string: url), parsed.scheme == "http" || parsed.scheme == "https", parsed.host != nil else {
                throw StartupError("\(upstream.urlSetting) is not an http(s) URL: \(url)")
            }
            upstreams[upstream.name] = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        self.upstreams = upstreams
        userRatePerSecond = Double(try settings.int("gateway.user-rate-per-second"))
        userBurst = Double(try settings.int("gateway.user-burst"))
        addressRatePerSecond = Double(try settings.int("gateway.address-rate-per-second"))
        addressBurst = Double(try settings.int("gateway.address-burst"))
        maxBodyBytes = try settings.int("gateway.max-body-bytes")
        maxPlainBodyBytes = try settings.int("gateway.max-plain-body-bytes")
        upstreamTimeoutSeconds = try settings.int("gateway.upstream-timeout-seconds")
        upstreamConnections = try settings.int("gateway.upstream-connections")
        guard (1...65_536).contains(upstreamConnections) else {
            throw StartupError("gateway.upstream-connections must be 1…65536, not \(upstreamConnections)")
        }
        trustedProxies = try TrustedProxies(parsing: try settings.string("gateway.trusted-proxies"))
        livenessIntervalMilliseconds = try settings.int("gateway.liveness-interval-ms")
        guard (100...60_000).contains(livenessIntervalMilliseconds) else {
            throw StartupError("gateway.liveness-interval-ms must be 100…60000, not \(livenessIntervalMilliseconds)")
        }
    }
}

extension GatewaySettings {
    /// The byte limit of a request body with this content type.
    func bodyLimit(contentType: String?) -> Int {
        let isMultipart = contentType?.lowercased().hasPrefix("multipart/form-data") == true
        return isMultipart ? maxBodyBytes : maxPlainBodyBytes
    }
}
