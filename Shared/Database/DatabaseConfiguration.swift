import Foundation
import Logging
import PostgresNIO

/// Where a service's PostgreSQL database is, parsed from a URL
/// (`postgres://user:password@host:port/database`; `?host=/path/to/socket/dir` selects a Unix socket).
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    /// Secret: never logged (see `description`).
    public var password: String?
    public var database: String
    public var unixSocketDirectory: String?
    public var maximumConnections: Int = 20

    public init(host: String, port: Int = 5432, username: String, password: String?, database: String, unixSocketDirectory: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.unixSocketDirectory = unixSocketDirectory
    }

    public enum ParseError: Error, CustomStringConvertible {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let why): return "invalid database URL: \(why)"
            }
        }
    }

    public init(url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else { throw ParseError.invalid("expected postgres://user:password@host:port/database") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw ParseError.invalid("no database name") }
        guard let user = components.user, !user.isEmpty else { throw ParseError.invalid("no user name") }
        let socketDir = components.queryItems?.first(where: { $0.name == "host" })?.value
        self.init(
            host: components.host ?? "127.0.0.1",
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database,
            unixSocketDirectory: socketDir
        )
    }

    /// The same server with another database (used to create per-service databases and test databases).
    public func with(database: String) -> DatabaseConfiguration {
        var copy = self
        copy.database = database
        return copy
    }

    /// URL form including the password (for passing to child processes, never for logs).
    public var url: String {
        var c = URLComponents()
        c.scheme = "postgres"
        c.user = username
        c.password = password
        c.host = host
        c.port = port
        c.path = "/" + database
        if let unixSocketDirectory { c.queryItems = [URLQueryItem(name: "host", value: unixSocketDirectory)] }
        return c.string ?? "postgres://\(username)@\(host):\(port)/\(database)"
    }

    /// Log-safe form: no password.
    public var description: String {
        if let unixSocketDirectory { return "postgres://\(username)@[\(unixSocketDirectory)]/\(database)" }
        return "postgres://\(username)@\(host):\(port)/\(database)"
    }

    public var postgresClientConfiguration: PostgresClient.Configuration {
        var config: PostgresClient.Configuration
        if let unixSocketDirectory {
            config = .init(unixSocketPath: "\(unixSocketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            config = .init(host: host, port: port, username: username, password: password, database: database, tls: .disable)
        }
        config.options.maximumConnections = maximumConnections
        config.options.connectTimeout = .seconds(5)
        return config
    }

    public func makeClient(logger: Logger) -> PostgresClient {
        PostgresClient(configuration: postgresClientConfiguration, backgroundLogger: logger)
    }
}
