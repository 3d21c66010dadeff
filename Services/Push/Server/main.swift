import PushApp
import ServiceKit

await ServiceMain.run(service: PushService.name, defaults: PushService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
