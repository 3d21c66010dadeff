import Foundation

/// A validator for the subset of JSON Schema 2020-12 docs/schemas uses: local `$ref`, `allOf`,
/// `if`/`then`/`else`, `not`, `type`, `const`, `enum`, `required`, `properties`, `items`,
/// `minItems`/`maxItems`/`uniqueItems`, `minimum`, `minLength`, `pattern`. A keyword outside that
/// subset is reported as a problem, so a schema can never silently check less than it says.
/// Strict beyond the standard (schemas stay open for readers): an object checked against a schema
/// that lists `required` must declare every key it has in that schema's `properties`.
struct SchemaValidator {
    static let annotations: Set<String> = ["$schema", "$defs", "title", "description", "examples", "format", "x-parser-schema-id"]
    static let assertions: Set<String> = [
        "$ref", "allOf", "if", "then", "else", "not", "type", "const", "enum", "required", "properties", "items", "minItems", "maxItems",
        "uniqueItems", "minimum", "minLength", "pattern",
    ]

    let root: [String: Any]

    func problems(_ instance: Any) -> [String] {
        var out: [String] = []
        check(instance, root, path: "$", into: &out)
        return out
    }

    private func resolve(_ ref: String) -> [String: Any]? {
        let prefix = "#/$defs/"
        guard ref.hasPrefix(prefix), let defs = root["$defs"] as? [String: Any] else { return nil }
        return defs[String(ref.dropFirst(prefix.count))] as? [String: Any]
    }

    private func check(_ value: Any, _ schema: [String: Any], path: String, into out: inout [String]) {
        for key in schema.keys where !Self.annotations.contains(key) && !Self.assertions.contains(key) {
            out.append("\(path): unsupported keyword \(key)")
        }
        if let ref = schema["$ref"] as? String {
            if let target = resolve(ref) { check(value, target, path: path, into: &out) } else { out.append("\(path): unresolved \(ref)") }
        }
        for sub in (schema["allOf"] as? [[String: Any]]) ?? [] { check(value, sub, path: path, into: &out) }
        if let condition = schema["if"] as? [String: Any] {
            var probe: [String] = []
            check(value, condition, path: path, into: &probe)
            if let branch = (probe.isEmpty ? schema["then"] : schema["else"]) as? [String: Any] { check(value, branch, path: path, into: &out) }
        }
        if let negated = schema["not"] as? [String: Any] {
            var probe: [String] = []
            check(value, negated, path: path, into: &probe)
            if probe.isEmpty { out.append("\(path): matches a schema under `not`") }
        }
        if let type = schema["type"] as? String, !Self.matches(value, type: type) {
            out.append("\(path): expected \(type), got \(Self.jsonType(value))")
            return
        }
        if let constant = schema["const"], !Self.equal(value, constant) { out.append("\(path): not the constant \(constant)") }
        if let options = schema["enum"] as? [Any], !options.contains(where: { Self.equal(value, $0) }) {
            out.append("\(path): \(value) not in \(options)")
        }
        if let text = value as? String {
            if let min = schema["minLength"] as? Int, text.count < min { out.append("\(path): shorter than \(min)") }
            if let pattern = schema["pattern"] as? String {
                if let regex = try? NSRegularExpression(pattern: pattern),
                    regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                {
                } else {
                    out.append("\(path): \"\(text)\" does not match \(pattern)")
                }
            }
        }
        if let number = Self.number(value), let minimum = (schema["minimum"] as? NSNumber)?.doubleValue, number < minimum {
            out.append("\(path): below \(minimum)")
        }
        if let object = value as? [String: Any] {
            let required = schema["required"] as? [String]
            for key in required ?? [] where object[key] == nil { out.append("\(path): missing required \(key)") }
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for (key, sub) in properties {
                if let v = object[key], let sub = sub as? [String: Any] { check(v, sub, path: "\(path).\(key)", into: &out) }
            }
            if required != nil, schema["properties"] != nil {
                for key in object.keys where properties[key] == nil { out.append("\(path): undeclared property \(key)") }
            }
        }
        if let array = value as? [Any] {
            if let min = schema["minItems"] as? Int, array.count < min { out.append("\(path): fewer than \(min) items") }
            if let max = schema["maxItems"] as? Int, array.count > max { out.append("\(path): more than \(max) items") }
            if schema["uniqueItems"] as? Bool == true {
                for (i, a) in array.enumerated() where array[..<i].contains(where: { Self.equal($0, a) }) {
                    out.append("\(path)[\(i)]: duplicate item")
                }
            }
            if let items = schema["items"] as? [String: Any] {
                for (i, item) in array.enumerated() { check(item, items, path: "\(path)[\(i)]", into: &out) }
            }
        }
    }

    static func isBool(_ value: Any) -> Bool {
        guard let n = value as? NSNumber else { return false }
        // Foundation (Linux and Darwin) boxes JSON booleans as NSNumber with Objective-C type `c`;
        // JSONSerialization never reads an integer as a char.
        return String(cString: n.objCType) == "c"
    }

    static func number(_ value: Any) -> Double? {
        guard !isBool(value), let n = value as? NSNumber else { return nil }
        return n.doubleValue
    }

    static func jsonType(_ value: Any) -> String {
        switch value {
        case is NSNull: return "null"
        case is String: return "string"
        case is [Any]: return "array"
        case is [String: Any]: return "object"
        default:
            if isBool(value) { return "boolean" }
            if let n = number(value) { return n == n.rounded() ? "integer" : "number" }
            return "\(type(of: value))"
        }
    }

    static func matches(_ value: Any, type: String) -> Bool {
        let actual = jsonType(value)
        return actual == type || (type == "number" && actual == "integer")
    }

    static func equal(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (let x as String, let y as String): return x == y
        case (is NSNull, is NSNull): return true
        default:
            if isBool(a) != isBool(b) { return false }
            if let x = a as? NSNumber, let y = b as? NSNumber { return x == y }
            if let x = a as? [Any], let y = b as? [Any] { return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) } }
            if let x = a as? [String: Any], let y = b as? [String: Any] {
                return Set(x.keys) == Set(y.keys) && x.allSatisfy { k, v in y[k].map { equal(v, $0) } ?? false }
            }
            return false
        }
    }
}
