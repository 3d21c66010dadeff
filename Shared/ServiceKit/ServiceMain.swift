import Configuration
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// The body of every executable's `@main`: settings, logging and metrics, build, run, and on
/// failure one clear line on stderr and exit status 1.
public enum ServiceMain {
    /// How long a stop may take gracefully before the application is cancelled.
    public static let gracefulShutdownLimit: Duration = .seconds(8)

    public static func run<App: ApplicationProtocol>(
        service: String,
        defaults: [AbsoluteConfigKey: ConfigValue],
        build: (ServiceSettings, Logger) async throws -> App
    ) async -> Never {
        let settings = ServiceSettings(serviceName: service, defaults: defaults)
        do {
            // Before anything uses NIO's shared event loops (they are made on first use).
            let loops = try settings.eventLoops
            if loops > 0 { NIOSingletons.groupLoopCountSuggestion = loops }
            try Observability.bootstrap(service: service, logFormat: try settings.logFormat)
            let logger = Observability.logger(service: service, level: try settings.logLevel)
            let app = try await build(settings, logger)
            // `Application.runService()`'s group, with the application watched as it stops, and a
            // bound on the graceful part: past it the application is cancelled (its server closes
            // the connections still open), so a process stops within a launcher's grace period
            // (Docker's default is 10 s; `chatsuite dev` gives 15 s).
            var configuration = ServiceGroupConfiguration(
                services: [StopWatch(app, name: "application", logger: logger)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            configuration.maximumGracefulShutdownDuration = ServiceMain.gracefulShutdownLimit
            try await ServiceGroup(configuration: configuration).run()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("\(service): error: \(describe(error))\n".utf8))
            exit(1)
        }
    }
}
