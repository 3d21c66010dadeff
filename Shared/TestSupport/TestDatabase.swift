import Database
import Foundation
import Logging
import PostgresNIO

/// A fresh, uniquely named database on the test PostgreSQL server (`TEST_DATABASE_URL`,
/// default `postgres://postgres:postgres@127.0.0.1:5432/postgres`), dropped by `drop()`.
public struct TestDatabase: Sendable {
    public let configuration: DatabaseConfiguration
    public let name: String

    public static var serverConfiguration: DatabaseConfiguration {
        get throws {
            let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres"
            return try DatabaseConfiguration(url: url)
        }
    }

    public static let logger: Logger = {
        var l = Logger(label: "test.db")
        l.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return l
    }()

    public static func create(prefix: String = "t") async throws -> TestDatabase {
        let server = try serverConfiguration
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        try await withAdmin(server) { connection in
            // Identifiers cannot be bound; `name` is generated above from hex digits only.
            _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: logger)
        }
        return TestDatabase(configuration: server.with(database: name), name: name)
    }

    public func drop() async throws {
        let server = try Self.serverConfiguration
        try await Self.withAdmin(server) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)"), logger: Self.logger)
        }
    }

    /// Runs `body` with a running `PostgresClient` for this database.
    public func withClient<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await Self.withRunningClient(configuration.makeClient(logger: Self.logger), body)
    }

    public static func withRunningClient<T: Sendable>(_ client: PostgresClient, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws
        -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    private static func withAdmin(_ server: DatabaseConfiguration, _ body: @escaping @Sendable (PostgresConnection) async throws -> Void) async throws {
        let client = server.makeClient(logger: logger)
        try await withRunningClient(client) { client in
            try await client.withConnection { try await body($0) }
        }
    }
}
