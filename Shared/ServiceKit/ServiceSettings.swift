import Configuration
import Database
import Foundation
import Logging

/// Settings every executable reads, from (highest priority first) command-line flags
/// (`--http-port 8081`), environment variables (`HTTP_PORT=8081`) and the service's defaults.
/// Every key is listed in docs/configuration.md.
public struct ServiceSettings: Sendable {
    public let serviceName: String
    public let reader: ConfigReader

    /// - Parameters:
    ///   - defaults: the service's own defaults (e.g. its port), below env and CLI.
    ///   - environment / arguments: injectable for tests and the dev launcher.
    public init(
        serviceName: String,
        defaults: [AbsoluteConfigKey: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        arguments: [String] = CommandLine.arguments
    ) {
        self.serviceName = serviceName
        let secrets = SecretsSpecifier<String, String>.dynamic { key, _ in
            let k = key.lowercased()
            return k.contains("password") || k.contains("secret") || k.contains("private") || k.contains("database_url")
                || k.contains("database-url") || k.contains("token") || k.contains("sesac_keys") || k.contains("sesac-keys")
        }
        var base: [AbsoluteConfigKey: ConfigValue] = [
            "http.host": "127.0.0.1",
            "http.port": 8080,
            "log.level": "info",
            "kafka.brokers": "127.0.0.1:9092",
            "kafka.startup-timeout-seconds": 10,
            "database.startup-timeout-seconds": 10,
            "database.max-connections": 20,
        ]
        for (k, v) in defaults { base[k] = v }
        reader = ConfigReader(providers: [
            CommandLineArgumentsProvider(arguments: arguments, secretsSpecifier: secrets),
            EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: secrets),
            InMemoryProvider(name: "\(serviceName) defaults", values: base),
        ])
    }

    public var httpHost: String { reader.string(forKey: "http.host", default: "127.0.0.1") }
    public var httpPort: Int { reader.int(forKey: "http.port", default: 8080) }
    public var logLevel: Logger.Level {
        Logger.Level(rawValue: reader.string(forKey: "log.level", default: "info").lowercased()) ?? .info
    }
    public var kafkaBrokers: String { reader.string(forKey: "kafka.brokers", default: "127.0.0.1:9092") }
    public var kafkaStartupTimeout: Duration { .seconds(reader.int(forKey: "kafka.startup-timeout-seconds", default: 10)) }
    public var databaseStartupTimeout: Duration { .seconds(reader.int(forKey: "database.startup-timeout-seconds", default: 10)) }
    /// A stable id for this replica (consumer client ids, gateway ids); defaults to host + pid.
    public var instanceId: String {
        reader.string(forKey: "instance.id") ?? "\(serviceName)-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }

    /// The service's database, or nil when `DATABASE_URL` is not set.
    public func database() throws -> DatabaseConfiguration? {
        guard let url = reader.string(forKey: "database.url", isSecret: true), !url.isEmpty else { return nil }
        var config = try DatabaseConfiguration(url: url)
        config.maximumConnections = reader.int(forKey: "database.max-connections", default: 20)
        return config
    }

    public func requiredDatabase() throws -> DatabaseConfiguration {
        guard let config = try database() else { throw StartupError("DATABASE_URL is not set (postgres://user:password@host:port/database)") }
        return config
    }
}

/// A clear, one-line reason why an executable cannot start.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
