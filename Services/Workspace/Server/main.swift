import WorkspaceApp
import ServiceKit

await ServiceMain.run(service: WorkspaceService.name, defaults: WorkspaceService.defaults) { settings, logger in
    try await buildApplication(settings: settings, logger: logger)
}
