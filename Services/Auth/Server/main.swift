import AuthApp
import ServiceKit

await ServiceMain.run(service: AuthService.name, defaults: AuthService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
