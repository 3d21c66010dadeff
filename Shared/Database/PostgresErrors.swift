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

    /// A unique-constraint violation (23505): a race the database decided; callers map it to E12.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
