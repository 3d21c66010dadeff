import ChatFanoutApp
import ServiceKit

await ServiceMain.run(service: ChatFanoutService.name, defaults: ChatFanoutService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
