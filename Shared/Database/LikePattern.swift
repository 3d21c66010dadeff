/// Patterns for `LIKE` / `ILIKE` built from user input (always bound as a parameter).
public enum LikePattern {
    /// A substring pattern with `%`, `_` and `\` taken literally (PostgreSQL's default escape).
    public static func contains(_ keyword: String) -> String {
        var escaped = ""
        for ch in keyword {
            if ch == "%" || ch == "_" || ch == "\\" { escaped.append("\\") }
            escaped.append(ch)
        }
        return "%\(escaped)%"
    }
}
