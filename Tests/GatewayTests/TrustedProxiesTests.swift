import Foundation
import HTTPTypes
import ServiceKit
import SuiteTesting
import Testing

@testable import GatewayApp

@Suite("Trusted proxies and the client address")
struct TrustedProxiesTests {
    static func proxies(_ text: String) throws -> TrustedProxies { try TrustedProxies(parsing: text) }

    @Test("IPs and CIDRs, IPv4 and IPv6; IPv4-mapped IPv6 peers count as IPv4")
    func parsing() throws {
        let trusted = try Self.proxies(" 10.0.0.0/8, 192.168.1.10 ,fd00::/8,::1")
        for address in ["10.1.2.3", "192.168.1.10", "fd12::5", "::1", "::ffff:10.9.9.9"] {
            #expect(trusted.contains(try #require(TrustedProxies.parse(address))), "\(address)")
        }
        for address in ["11.0.0.1", "192.168.1.11", "fe80::1", "::2"] {
            #expect(!trusted.contains(try #require(TrustedProxies.parse(address))), "\(address)")
        }
        #expect(try Self.proxies("").networks.isEmpty)
        #expect(try Self.proxies("0.0.0.0/0").contains([203, 0, 113, 1]))
        for bad in ["10.0.0.0/33", "10.0.0/8", "proxy.local", "10.0.0.1/", "::1/129", "1.2.3.4/8/8"] {
            #expect(throws: StartupError.self, "\(bad)") { try Self.proxies(bad) }
        }
    }

    @Test("only a trusted peer's X-Forwarded-For is read: the right-most address that is not a trusted proxy")
    func resolution() throws {
        let trusted = try Self.proxies("10.0.0.0/8")
        // Untrusted peer: the header is the client's claim and is ignored.
        #expect(trusted.clientAddress(peer: "203.0.113.9", forwardedFor: ["1.1.1.1"]) == "203.0.113.9")
        #expect(try Self.proxies("").clientAddress(peer: "10.0.0.1", forwardedFor: ["1.1.1.1"]) == "10.0.0.1")
        // Trusted peer: the address it appended.
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["198.51.100.7"]) == "198.51.100.7")
        // The client's own (spoofed) entries left of it are never used.
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6, 198.51.100.7"]) == "198.51.100.7")
        // Two proxy hops, split across header lines, with ports and brackets.
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6", "198.51.100.7:5123, 10.2.3.4"]) == "198.51.100.7")
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["[2001:db8::7]:443"]) == "2001:db8::7")
        // No header, or only trusted hops: the left-most known address.
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: []) == "10.0.0.1")
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["10.0.0.2"]) == "10.0.0.2")
        // Garbage written by a trusted hop: stop at that hop rather than key on the garbage.
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: ["198.51.100.7, unknown"]) == "10.0.0.1")
    }

    @Test("gateway id: GATEWAY_ID, then INSTANCE_ID, then the host name (with the pid outside a container)")
    func gatewayIdentity() {
        #expect(GatewayIdentity.id(configured: "gw-1", instanceId: "i", hostname: "h", pid: 1) == "gw-1")
        #expect(GatewayIdentity.id(configured: " ", instanceId: "i", hostname: "h", pid: 1) == "i")
        #expect(GatewayIdentity.id(configured: nil, instanceId: nil, hostname: "3f2a9c1b7d4e", pid: 1) == "gateway-3f2a9c1b7d4e")
        // Two compose replicas: different container host names, so different ids.
        #expect(
            GatewayIdentity.id(configured: nil, instanceId: nil, hostname: "3f2a9c1b7d4e", pid: 1)
                != GatewayIdentity.id(configured: nil, instanceId: nil, hostname: "9b8c7d6e5f4a", pid: 1))
        // Two gateways on one host outside containers.
        #expect(GatewayIdentity.id(configured: nil, instanceId: nil, hostname: "dev", pid: 4242) == "gateway-dev-4242")
    }

    /// The test client connects from 127.0.0.1; E98 after the per-address burst.
    static func validate(_ s: Stack, forwardedFor: String?) async throws -> String? {
        var headers = s.headers()
        if let forwardedFor { headers[TrustedProxies.xForwardedFor] = forwardedFor }
        return errorCode(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"a@example.com"}"#, headers: headers))
    }

    static let limits = ["GATEWAY_ADDRESS_BURST": "3", "GATEWAY_ADDRESS_RATE_PER_SECOND": "1"]

    @Test("behind a trusted proxy two clients are limited separately; a client's own X-Forwarded-For does not reset its limit")
    func trustedProxyWholePath() async throws {
        try await Stack.run(gateway: Self.limits.merging(["GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32, ::1"]) { $1 }) { s in
            // Client A spends its burst (1 token per second comes back: a 4th may pass on a slow machine).
            var a: [String?] = []
            for _ in 0..<6 { a.append(try await Self.validate(s, forwardedFor: "198.51.100.1")) }
            #expect(a.prefix(3).allSatisfy { $0 == nil }, "\(a)")
            #expect(a.contains("E98"), "\(a)")
            // Client B behind the same proxy still has its own burst.
            #expect(try await Self.validate(s, forwardedFor: "198.51.100.2") == nil)
            // A puts a made-up address in front: the proxy's entry (right-most) still names A.
            var spoofed: [String?] = []
            for _ in 0..<3 { spoofed.append(try await Self.validate(s, forwardedFor: "203.0.113.\(spoofed.count + 50), 198.51.100.1")) }
            #expect(spoofed.contains("E98"), "\(spoofed)")
        }
    }

    @Test("from an untrusted peer X-Forwarded-For is ignored: made-up addresses share the peer's limit")
    func untrustedPeerWholePath() async throws {
        try await Stack.run(gateway: Self.limits.merging(["GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8"]) { $1 }) { s in
            var codes: [String?] = []
            for index in 0..<6 { codes.append(try await Self.validate(s, forwardedFor: "198.51.100.\(index + 1)")) }
            #expect(codes.prefix(3).allSatisfy { $0 == nil }, "\(codes)")
            #expect(codes.contains("E98"), "each made-up address would have had its own burst: \(codes)")
        }
    }
}
