import ServiceKit
import StudyApp

await ServiceMain.run(service: StudyService.name, defaults: StudyService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
