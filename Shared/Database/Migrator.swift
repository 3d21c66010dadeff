import Logging
import PostgresNIO

/// One schema change. Versions are applied in ascending order, each once, each in its own
/// transaction. Never edit an applied migration; add a new one.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(_ version: Int, _ name: String, _ sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

public struct MigrationError: Error, CustomStringConvertible {
    public let description: String
}

/// Applies ordered SQL migrations, recording them in `schema_migrations`. An advisory lock makes
/// concurrent starts (several replicas at once) safe: one migrates, the others wait and then find
/// nothing left to do.
public struct Migrator: Sendable {
    /// Arbitrary constant: the advisory lock id every migrator of a database takes.
    static let lockId: Int64 = 0x6368_6174_6d69_6772  // "chatmigr"

    public let migrations: [Migration]

    public init(_ migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Returns the versions applied by this call (empty when already up to date).
    @discardableResult
    public func migrate(client: PostgresClient, logger: Logger) async throws -> [Int] {
        var seen = Set<Int>()
        for m in migrations where !seen.insert(m.version).inserted {
            throw MigrationError(description: "duplicate migration version \(m.version)")
        }
        return try await client.withLiveConnection { connection in
            _ = try await connection.query("SELECT pg_advisory_lock(\(Self.lockId))", logger: logger)
            do {
                let applied = try await apply(on: connection, logger: logger)
                _ = try await connection.query("SELECT pg_advisory_unlock(\(Self.lockId))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockId))", logger: logger)
                throw error
            }
        }
    }

    private func apply(on connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        _ = try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var existing: [Int: String] = [:]
        for try await (version, name) in try await connection.query("SELECT version, name FROM schema_migrations", logger: logger)
            .decode((Int, String).self)
        {
            existing[version] = name
        }
        var applied: [Int] = []
        for migration in migrations {
            if let name = existing[migration.version] {
                guard name == migration.name else {
                    throw MigrationError(description: "migration \(migration.version) is recorded as '\(name)' but the code has '\(migration.name)'")
                }
                continue
            }
            logger.info("applying migration", metadata: ["db.migration": "\(migration.version) \(migration.name)"])
            _ = try await connection.simpleQuery("BEGIN").get()
            do {
                for statement in SQLStatements.split(migration.sql) {
                    _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                _ = try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger
                )
                _ = try await connection.simpleQuery("COMMIT").get()
            } catch {
                _ = try? await connection.simpleQuery("ROLLBACK").get()
                throw MigrationError(description: "migration \(migration.version) '\(migration.name)' failed: \(String(reflecting: error))")
            }
            applied.append(migration.version)
        }
        return applied
    }
}
