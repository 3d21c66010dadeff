import Events
import Foundation
import ServiceLifecycle

/// Announces this gateway process on `gateway.session.v1` every `interval`
/// (`GatewayEvents.GatewayAlive`), so presence can expire the sessions of a gateway that
/// crashed without closing them; on a graceful stop, `GatewayStopped` and the key's tombstone.
struct GatewayLiveness: Service {
    let gatewayId: String
    let intervalMilliseconds: Int
    let events: GatewayEventPublisher

    func run() async throws {
        let startedAt = Date()
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                events.publish(
                    GatewayEvents.GatewayAlive(
                        gatewayId: gatewayId, instanceId: events.instanceId, startedAt: startedAt, at: Date(), intervalMilliseconds: intervalMilliseconds))
                try await Task.sleep(for: .milliseconds(intervalMilliseconds))
            }
        }
        events.publishFinal(GatewayEvents.GatewayStopped(gatewayId: gatewayId, instanceId: events.instanceId, at: Date()))
    }
}
