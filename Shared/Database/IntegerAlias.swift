/// Stable integer aliases for entities that legacy clients decode as `Int` (Smooth, the Gen A
/// workspace client); the canonical `/v1` API keeps UUIDs. The owning service stores the alias
/// beside the UUID (`alias bigint NOT NULL UNIQUE`) and carries it in its events, so other
/// services' read models know it too.
///
/// Aliases are random in 1…2⁵³−1 (exact in a `Double`, so JavaScript clients keep them too), not
/// a sequence: they cannot be enumerated, which matters where a legacy client reads without a
/// token (Smooth's chat history). A collision is a unique violation of probability n/2⁵³ per
/// insert (about 10⁻¹⁰ at a million rows); the insert fails and the client retries.
public enum IntegerAlias {
    /// The generator, created once per database by the first migration that needs it.
    public static let createFunction = """
        CREATE OR REPLACE FUNCTION new_alias() RETURNS bigint LANGUAGE sql VOLATILE AS
        $$ SELECT (floor(random() * 9007199254740990) + 1)::bigint $$
        """

    /// Adds the alias column to an existing table (every row gets its own value) and its index.
    public static func addColumn(to table: String) -> String {
        """
        ALTER TABLE \(table) ADD COLUMN alias bigint NOT NULL DEFAULT new_alias();
        CREATE UNIQUE INDEX \(table)_alias ON \(table) (alias)
        """
    }

    /// The largest alias (2⁵³ − 1); a legacy id above it, or below 1, names nothing.
    public static let maximum: Int64 = 9_007_199_254_740_991

    /// A legacy id from a path, query or body, if it can be an alias.
    public static func parse(_ text: Substring) -> Int64? {
        guard let value = Int64(text), value >= 1, value <= maximum else { return nil }
        return value
    }

    public static func parse(_ text: String) -> Int64? { parse(text[...]) }
}
