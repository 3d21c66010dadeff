import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// Where a service's PostgreSQL database is, parsed from a URL
/// (`postgres://user:password@host:port/database`; `?host=/path/to/socket/dir` selects a Unix socket;
/// `?sslmode=require&sslrootcert=/path/ca.pem` TLS as libpq understands them).
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    /// Secret: never logged (see `description`).
    public var password: String?
    public var database: String
    public var unixSocketDirectory: String?
    public var maximumConnections: Int = 20
    /// TLS towards the server (`sslmode`); nil: not given, which `disable` stands for unless a
    /// setting (`database.sslmode`) fills it in.
    public var sslMode: SSLMode?
    /// A PEM bundle of CAs for `verify-ca` / `verify-full` (`sslrootcert`; nil: the system's).
    public var sslRootCertificate: String?

    /// libpq's `sslmode` values, except `allow` (plaintext first), which PostgresNIO cannot do.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// No TLS (a server on the same host or private network).
        case disable
        /// TLS when the server offers it, without verifying its certificate.
        case prefer
        /// TLS, without verifying the certificate (libpq's `require`: protects against eavesdropping only).
        case require
        /// TLS, the certificate signed by a trusted CA, any host name.
        case verifyCA = "verify-ca"
        /// TLS, the certificate signed by a trusted CA and naming the host (managed PostgreSQL).
        case verifyFull = "verify-full"

        public init(parsing text: String) throws(ParseError) {
            let name = text.trimmingCharacters(in: .whitespaces).lowercased()
            guard let mode = SSLMode(rawValue: name) else {
                throw ParseError.unsupportedSSLMode(name)
            }
            self = mode
        }
    }

    public init(host: String, port: Int = 5432, username: String, password: String?, database: String, unixSocketDirectory: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.unixSocketDirectory = unixSocketDirectory
    }

    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case invalid(String)
        /// An `sslmode` this client cannot honour (in the URL or the setting).
        case unsupportedSSLMode(String)
        public var description: String {
            switch self {
            case .invalid(let why): return "invalid database URL: \(why)"
            case .unsupportedSSLMode(let mode):
                return "sslmode '\(mode)' is not supported: use \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))"
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
        let query = components.queryItems ?? []
        func parameter(_ name: String) -> String? { query.first(where: { $0.name == name })?.value.flatMap { $0.isEmpty ? nil : $0 } }
        let socketDir = parameter("host")
        self.init(
            host: components.host ?? "127.0.0.1",
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database,
            unixSocketDirectory: socketDir
        )
        if let mode = parameter("sslmode") { sslMode = try SSLMode(parsing: mode) }
        sslRootCertificate = parameter("sslrootcert")
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
        var query: [URLQueryItem] = []
        if let unixSocketDirectory { query.append(URLQueryItem(name: "host", value: unixSocketDirectory)) }
        if let sslMode { query.append(URLQueryItem(name: "sslmode", value: sslMode.rawValue)) }
        if let sslRootCertificate { query.append(URLQueryItem(name: "sslrootcert", value: sslRootCertificate)) }
        if !query.isEmpty { c.queryItems = query }
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
            config = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        config.options.maximumConnections = maximumConnections
        config.options.connectTimeout = .seconds(5)
        return config
    }

    /// PostgresNIO's TLS for `sslMode` (a Unix socket never uses TLS).
    public var tls: PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let sslRootCertificate { tls.trustRoots = .file(sslRootCertificate) }
        switch sslMode ?? .disable {
        case .disable:
            return .disable
        case .prefer:
            tls.certificateVerification = .none
            return .prefer(tls)
        case .require:
            tls.certificateVerification = .none
            return .require(tls)
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            return .require(tls)
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            return .require(tls)
        }
    }

    public func makeClient(logger: Logger) -> PostgresClient {
        PostgresClient(configuration: postgresClientConfiguration, backgroundLogger: logger)
    }
}
