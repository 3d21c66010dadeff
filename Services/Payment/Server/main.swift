import PaymentApp
import ServiceKit

await ServiceMain.run(service: PaymentService.name, defaults: PaymentService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
