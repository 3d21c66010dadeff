import PresenceApp
import ServiceKit

await ServiceMain.run(service: PresenceService.name, defaults: PresenceService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
