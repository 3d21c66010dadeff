/// Splits a SQL script into statements at top-level semicolons, respecting single-quoted
/// strings, quoted identifiers, dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`) and comments.
/// Needed because postgres-nio sends each query through the extended protocol, which accepts
/// one statement at a time.
public enum SQLStatements {
    public static func split(_ script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var i = 0
        func flush() {
            let text = String(current).trimmingWhitespace()
            if !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            if c == "-", next == "-" {  // line comment
                while i < chars.count, chars[i] != "\n" { i += 1 }
                continue
            }
            if c == "/", next == "*" {  // block comment (nesting allowed in PostgreSQL)
                var depth = 0
                while i < chars.count {
                    if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" { depth += 1; i += 2; continue }
                    if chars[i] == "*", i + 1 < chars.count, chars[i + 1] == "/" { depth -= 1; i += 2; if depth == 0 { break }; continue }
                    i += 1
                }
                current.append(" ")
                continue
            }
            if c == "'" || c == "\"" {
                current.append(c)
                i += 1
                while i < chars.count {
                    current.append(chars[i])
                    if chars[i] == c {
                        if i + 1 < chars.count, chars[i + 1] == c {  // doubled quote = escaped
                            current.append(chars[i + 1])
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    i += 1
                }
                continue
            }
            if c == "$", let tagEnd = dollarTagEnd(chars, from: i) {
                let tag = Array(chars[i...tagEnd])
                current.unicodeScalars.append(contentsOf: tag)
                i = tagEnd + 1
                while i < chars.count {
                    if chars[i] == "$", i + tag.count <= chars.count, Array(chars[i..<(i + tag.count)]) == tag {
                        current.unicodeScalars.append(contentsOf: tag)
                        i += tag.count
                        break
                    }
                    current.append(chars[i])
                    i += 1
                }
                continue
            }
            if c == ";" {
                flush()
                i += 1
                continue
            }
            current.append(c)
            i += 1
        }
        flush()
        return statements
    }

    /// If a dollar-quote tag (`$$` or `$name$`) starts at `start`, the index of its closing `$`.
    private static func dollarTagEnd(_ chars: [Unicode.Scalar], from start: Int) -> Int? {
        var j = start + 1
        while j < chars.count {
            let ch = chars[j]
            if ch == "$" { return j }
            let isIdent = (ch >= "a" && ch <= "z") || (ch >= "A" && ch <= "Z") || ch == "_" || (j > start + 1 && ch >= "0" && ch <= "9")
            if !isIdent { return nil }
            j += 1
        }
        return nil
    }
}

extension String.UnicodeScalarView {
    fileprivate var unicodeScalars: Self {
        get { self }
        set { self = newValue }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
