import PostgresNIO

extension Error {
    /// The server's SQLSTATE, looking through `PostgresTransactionError`'s wrapping.
    public var sqlState: String? {
        if let error = self as? PSQLError { return error.serverInfo?[.sqlState] }
        if let error = self as? PostgresTransactionError {
            return error.closureError?.sqlState ?? error.commitError?.sqlState
        }
        return nil
    }

    /// Text PostgreSQL cannot store (22021: a NUL character or invalid UTF-8; 22P05: not
    /// representable in the database encoding): client input that slipped past validation, so a
    /// bad request (E11), never a 500.
    public var isUnstorableText: Bool { sqlState == "22021" || sqlState == "22P05" }

    /// A unique-constraint violation (23505): a race the database decided; callers map it to E12.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// The database was unreachable or went away under the request (restarted, shutting down,
    /// out of connections, connection lost): a dependency outage, not the request's fault — the
    /// client may retry (E99 with 503), and it is never a 500.
    public var isDatabaseUnavailable: Bool {
        if self is PostgresConnectionClosed { return true }
        if let error = self as? PostgresTransactionError {
            return (error.closureError ?? error.beginError ?? error.commitError)?.isDatabaseUnavailable ?? false
        }
        guard let error = self as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed:
            return true
        case .server:
            // 08: connection exception; 57P01–57P03: admin / crash shutdown, cannot connect now;
            // 53300: too many connections.
            guard let state = error.serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300"].contains(state)
        default:
            return false
        }
    }
}
