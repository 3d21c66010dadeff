import PostgresNIO

extension PostgresBindings {
    /// The parameters of a prepared statement, `$1`, `$2`, … in order; a nil one binds NULL.
    public init<each Value: PostgresDynamicTypeEncodable>(values value: repeat Optional<each Value>) {
        self.init()
        for parameter in repeat each value { append(parameter) }
    }
}
