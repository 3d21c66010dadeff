import GatewayApp
import ServiceKit

await ServiceMain.run(service: GatewayService.name, defaults: GatewayService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
