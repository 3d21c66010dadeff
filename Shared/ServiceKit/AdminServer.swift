import Hummingbird
import Logging
import ServiceLifecycle

/// A second HTTP listener for operators: `/health/live`, `/health/ready` and `/metrics` of a
/// service whose own port faces clients (the gateway), so none of them is reachable from the
/// internet through it. Runs as one of the platform's services (started before the public
/// server, stopped after it).
public struct AdminServer: Service {
    let application: Application<RouterResponder<BasicRequestContext>>

    public init(host: String, port: Int, health: HealthChecks, logger: Logger) {
        let router = Router()
        health.addRoutes(to: router)
        var logger = logger
        logger[metadataKey: "listener"] = "admin"
        application = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil), logger: logger)
    }

    public func run() async throws {
        try await application.run()
    }
}
