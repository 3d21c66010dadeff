import ChatApp
import ServiceKit

await ServiceMain.run(service: ChatService.name, defaults: ChatService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
