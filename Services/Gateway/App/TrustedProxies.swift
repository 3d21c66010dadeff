import Common
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The proxies in front of the gateway whose `X-Forwarded-For` is believed
/// (`gateway.trusted-proxies`: comma-separated IPs and CIDRs). The client's address keys the
/// per-address rate limit and the real-time admission, so without this every client behind one
/// load balancer shares one budget; believing the header from anyone would let a client pick its
/// own key.
struct TrustedProxies: Sendable, Equatable {
    /// An IPv4 or IPv6 network; IPv4-mapped IPv6 addresses count as IPv4.
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for (a, b) in zip(address, bytes) where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                guard a & mask == b & mask else { return false }
                remaining -= bits
            }
            return true
        }
    }

    let networks: [Network]

    static let none = TrustedProxies(networks: [])

    private init(networks: [Network]) { self.networks = networks }

    /// Parses `10.0.0.0/8, 192.168.1.10, fd00::/8`; empty: none.
    init(parsing text: String) throws(StartupError) {
        var networks: [Network] = []
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let bytes = Self.parse(String(parts[0])) else {
                throw StartupError("gateway.trusted-proxies (GATEWAY_TRUSTED_PROXIES): '\(entry)' is not an IP address or CIDR")
            }
            var prefixLength = bytes.count * 8
            if parts.count == 2 {
                guard let length = Int(parts[1]), (0...bytes.count * 8).contains(length) else {
                    throw StartupError("gateway.trusted-proxies (GATEWAY_TRUSTED_PROXIES): '\(entry)' has no valid prefix length (0–\(bytes.count * 8))")
                }
                prefixLength = length
            }
            networks.append(Network(bytes: bytes, prefixLength: prefixLength))
        }
        self.networks = networks
    }

    func contains(_ address: [UInt8]) -> Bool { networks.contains { $0.contains(address) } }

    /// The client's address for a request from `peer` carrying `forwardedFor` (the header's
    /// values in order). The peer itself unless it is trusted; then the chain is walked from the
    /// right past trusted proxies, and the first address that is not trusted is the client (the
    /// entries left of it were written by the client, so they are never believed). A malformed
    /// entry ends the walk at the proxy that wrote it.
    func clientAddress(peer: String, forwardedFor: [String]) -> String {
        guard !networks.isEmpty, let peerBytes = Self.parse(peer), contains(peerBytes) else { return peer }
        let chain = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingHTTPWhitespace() }.filter { !$0.isEmpty }
        var client = peer
        for entry in chain.reversed() {
            guard let address = Self.hostPart(of: entry), let bytes = Self.parse(address) else { return client }
            client = address
            if !contains(bytes) { return client }
        }
        return client
    }

    /// The request's client address: its TCP peer, or what a trusted peer forwarded.
    func clientAddress(peer: SocketAddress?, headers: HTTPFields) -> String {
        let peerAddress = peer?.ipAddress ?? "unknown"
        guard !networks.isEmpty else { return peerAddress }
        return clientAddress(peer: peerAddress, forwardedFor: headers[values: Self.xForwardedFor])
    }

    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// `1.2.3.4`, `1.2.3.4:5678`, `[2001:db8::1]:443` or `2001:db8::1` → the address alone.
    static func hostPart(of entry: String) -> String? {
        if entry.hasPrefix("[") {
            guard let end = entry.firstIndex(of: "]") else { return nil }
            return String(entry[entry.index(after: entry.startIndex)..<end])
        }
        let colons = entry.count(where: { $0 == ":" })
        if colons == 1, let colon = entry.firstIndex(of: ":") { return String(entry[..<colon]) }
        return entry
    }

    /// The address's bytes (4 for IPv4 and IPv4-mapped IPv6, 16 for IPv6), nil when it is not one.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        // ::ffff:a.b.c.d, as a dual-stack listener reports IPv4 peers.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }
}

/// Sets the request context's client address from the peer and, for trusted proxies,
/// `X-Forwarded-For` (before the access log, the rate limit and Socket.IO's polling routes read it).
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let trustedProxies: TrustedProxies

    func handle(_ request: Request, context: GatewayRequestContext, next: (Request, GatewayRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.clientAddress = trustedProxies.clientAddress(peer: context.remoteAddress, headers: request.headers)
        return try await next(request, context)
    }
}
