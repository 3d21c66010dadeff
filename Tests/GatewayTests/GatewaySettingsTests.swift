import AccessTokens
import ServiceKit
import SuiteTesting
import Testing

@testable import GatewayApp

@Suite("Gateway settings")
struct GatewaySettingsTests {
    static func settings(_ environment: [String: String]) throws -> GatewaySettings {
        let keys = try JWTKeyPEM.newEd25519()
        let base = ["SESAC_KEYS": "k", "JWT_PUBLIC_KEY": keys.publicKey]
        return try GatewaySettings(
            ServiceSettings(
                serviceName: "gateway", defaults: GatewayService.defaults, environment: base.merging(environment) { $1 }, arguments: ["gateway"]))
    }

    @Test("connections per service: 1024 by default, configurable, 0 or over 65536 refused at start")
    func upstreamConnections() throws {
        #expect(try Self.settings([:]).upstreamConnections == 1_024)
        #expect(try Self.settings(["GATEWAY_UPSTREAM_CONNECTIONS": "8"]).upstreamConnections == 8)
        for bad in ["0", "-1", "65537", "many"] {
            #expect(throws: StartupError.self, "\(bad)") { try Self.settings(["GATEWAY_UPSTREAM_CONNECTIONS": bad]) }
        }
    }

    @Test("gateway.realtime.send-ring: on unless set to false; anything but a boolean refused at start")
    func sendRing() throws {
        func realtime(_ environment: [String: String]) throws -> RealtimeSettings {
            try RealtimeSettings(
                ServiceSettings(serviceName: GatewayService.name, defaults: GatewayService.defaults, environment: environment, arguments: ["gateway"]))
        }
        #expect(try realtime([:]).sendRing)
        #expect(try !realtime(["GATEWAY_REALTIME_SEND_RING": "false"]).sendRing)
        #expect(try realtime(["GATEWAY_REALTIME_SEND_RING": "true"]).sendRing)
        #expect(throws: (any Error).self) { try realtime(["GATEWAY_REALTIME_SEND_RING": "sometimes"]) }
    }
}
