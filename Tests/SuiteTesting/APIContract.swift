import Foundation
import OpenAPIKit
import Yams

/// docs/openapi.yaml, parsed (OpenAPIKit), checked for internal consistency and with every
/// reference resolved, and a check of a real answer against it: the whole-path tests run every
/// answer the gateway gives through `violations(...)`, so the document cannot drift from what
/// the suite answers.
public struct APIContract: Sendable {
    public let document: OpenAPI.Document
    /// Path template (`/v1/workspaces/{workspace}`) → upper-case method → its answers by status
    /// key (`200`, `4XX`, `default`).
    public let operations: [String: [String: [String: DocumentedResponse]]]

    /// One documented answer: its media types and, for JSON, the schema with references resolved.
    public struct DocumentedResponse: Sendable {
        public var mediaTypes: [String]
        public var json: DereferencedJSONSchema?
    }

    /// The document in the repository, loaded once.
    public static let repository: Result<APIContract, any Error> = Result { try APIContract(url: documentURL) }
    /// Gen A's document (docs/openapi-generation-a.yaml: Lilac's paths and shapes).
    public static let generationA: Result<APIContract, any Error> = Result { try APIContract(url: generationADocumentURL) }

    public static var documentURL: URL { docs.appendingPathComponent("openapi.yaml") }
    public static var generationADocumentURL: URL { docs.appendingPathComponent("openapi-generation-a.yaml") }

    static var docs: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs")
    }

    public init(url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        document = try YAMLDecoder().decode(OpenAPI.Document.self, from: text)
        // Structural rules: unique operation ids, resolvable references, path parameters declared.
        try document.validate()
        let resolved = try document.locallyDereferenced()
        var operations: [String: [String: [String: DocumentedResponse]]] = [:]
        for (path, item) in resolved.paths {
            for endpoint in item.endpoints {
                var responses: [String: DocumentedResponse] = [:]
                for (status, response) in endpoint.operation.responses {
                    let json = response.content.first { $0.key.typeAndSubtype == "application/json" }
                    responses[status.rawValue.uppercased()] = DocumentedResponse(
                        mediaTypes: response.content.keys.map(\.typeAndSubtype), json: json?.value.schema)
                }
                operations[path.rawValue, default: [:]][endpoint.method.rawValue.uppercased()] = responses
            }
        }
        self.operations = operations
    }

    /// The documented template a concrete path falls under, or nil.
    public func template(for path: String) -> String? {
        let segments = Self.segments(path)
        // Literal segments beat parameters, the leftmost counting most.
        var best: (template: String, score: Int)?
        for template in operations.keys {
            let pattern = Self.segments(template)
            guard pattern.count == segments.count else { continue }
            var score = 0
            var matches = true
            for (index, (p, s)) in zip(pattern, segments).enumerated() {
                if p.hasPrefix("{") && p.hasSuffix("}") { continue }
                guard p == s else {
                    matches = false
                    break
                }
                score += 1 << (pattern.count - index)
            }
            if matches, score > best?.score ?? -1 { best = (template, score) }
        }
        return best?.template
    }

    static func segments(_ path: String) -> [Substring] {
        let withoutQuery = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return withoutQuery.split(separator: "/")
    }

    /// What is wrong with an answer, measured against the document; empty when it conforms.
    /// An undocumented path is fine only when the answer is the gateway's E97 (unknown route).
    public func violations(method: String, uri: String, status: Int, contentType: String?, body: Data) -> [String] {
        let method = method.uppercased()
        let where_ = "\(method) \(uri) → \(status)"
        guard let template = template(for: uri), let responses = operations[template]?[method] else {
            if status == 404 || status == 405 { return [] }
            if status >= 400, let code = try? JSONDecoder().decode([String: String].self, from: body)["errorCode"], code == "E97" || code == "E02" {
                return []
            }
            return ["\(where_): no operation in docs/openapi.yaml"]
        }
        guard let response = responses[String(status)] ?? responses["\(status / 100)XX"] ?? responses["DEFAULT"] else {
            return ["\(where_): status \(status) is not documented for \(method) \(template)"]
        }
        guard !response.mediaTypes.isEmpty else { return [] }
        let isJSON = contentType?.lowercased().hasPrefix("application/json") ?? false
        guard response.mediaTypes.contains("application/json") else {
            // Files and other media: the type is all there is to check.
            if isJSON { return ["\(where_): answered JSON where the document has \(response.mediaTypes)"] }
            return []
        }
        guard isJSON else { return ["\(where_): answered \(contentType ?? "no content type"), the document says application/json"] }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: body)
        } catch {
            return ["\(where_): the body is not JSON: \(error)"]
        }
        guard let schema = response.json else { return [] }
        var problems: [String] = []
        JSONSchemaCheck.check(value, against: schema, at: "$", into: &problems)
        return problems.map { "\(where_) (\(template)): \($0)" }
    }
}

/// A JSON value as decoded, keeping integers, numbers and booleans apart (JSONSerialization's
/// NSNumber does not).
public indirect enum JSONValue: Decodable, Sendable, Equatable {
    case null, bool(Bool), int(Int), double(Double), string(String), array([JSONValue]), object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? container.decode(Int.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// The JSON Schema (2020-12, as OpenAPI 3.1 uses it) keywords the document uses: type and
/// null, properties / required / additionalProperties, items, enum, maxLength, the date-time and
/// uuid formats, allOf / oneOf / anyOf / not.
enum JSONSchemaCheck {
    static func check(_ value: JSONValue, against schema: DereferencedJSONSchema, at path: String, into problems: inout [String]) {
        if value == .null, schema.nullable { return }
        if let allowed = schema.allowedValues, !allowed.contains(where: { matches(value, $0.value) }) {
            problems.append("\(path): \(value) is not one of \(allowed.map { "\($0.value)" })")
            return
        }
        switch schema {
        case .fragment:
            return
        case .null:
            if value != .null { problems.append("\(path): expected null, got \(value)") }
        case .boolean:
            if case .bool = value { return }
            problems.append("\(path): expected a boolean, got \(value)")
        case .integer:
            switch value {
            case .int: return
            case .double(let d) where d.rounded() == d: return
            default: problems.append("\(path): expected an integer, got \(value)")
            }
        case .number:
            switch value {
            case .int, .double: return
            default: problems.append("\(path): expected a number, got \(value)")
            }
        case .string(let core, let context):
            guard case .string(let string) = value else {
                problems.append("\(path): expected a string, got \(value)")
                return
            }
            if let max = context.maxLength, string.count > max { problems.append("\(path): \(string.count) characters, over maxLength \(max)") }
            switch core.format {
            case .dateTime where !isDateTime(string): problems.append("\(path): \"\(string)\" is not a date-time")
            case .other("uuid") where UUID(uuidString: string) == nil: problems.append("\(path): \"\(string)\" is not a uuid")
            default: break
            }
        case .object(_, let context):
            guard case .object(let object) = value else {
                problems.append("\(path): expected an object, got \(value)")
                return
            }
            for key in context.requiredProperties where object[key] == nil { problems.append("\(path): required property \(key) is missing") }
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                if let property = context.properties[key] {
                    check(member, against: property, at: "\(path).\(key)", into: &problems)
                } else if let additional = context.additionalProperties {
                    switch additional {
                    case .a(let allowed): if !allowed { problems.append("\(path): property \(key) is not in the document") }
                    case .b(let schema): check(member, against: schema, at: "\(path).\(key)", into: &problems)
                    }
                }
            }
        case .array(_, let context):
            guard case .array(let items) = value else {
                problems.append("\(path): expected an array, got \(value)")
                return
            }
            if let schema = context.items {
                for (index, item) in items.enumerated() { check(item, against: schema, at: "\(path)[\(index)]", into: &problems) }
            }
        case .all(let schemas, _):
            for schema in schemas { check(value, against: schema, at: path, into: &problems) }
        case .one(let schemas, _):
            let passing = schemas.filter { passes(value, $0, path) }.count
            if passing != 1 { problems.append("\(path): matches \(passing) of oneOf's \(schemas.count) schemas") }
        case .any(let schemas, _):
            if !schemas.contains(where: { passes(value, $0, path) }) { problems.append("\(path): matches none of anyOf's schemas") }
        case .not(let schema, _):
            if passes(value, schema, path) { problems.append("\(path): matches a schema it must not") }
        }
    }

    static func passes(_ value: JSONValue, _ schema: DereferencedJSONSchema, _ path: String) -> Bool {
        var problems: [String] = []
        check(value, against: schema, at: path, into: &problems)
        return problems.isEmpty
    }

    static func matches(_ value: JSONValue, _ allowed: Any) -> Bool {
        switch value {
        case .string(let s): return (allowed as? String) == s
        case .int(let i): return (allowed as? Int) == i
        case .bool(let b): return (allowed as? Bool) == b
        case .null: return allowed is NSNull || "\(allowed)" == "nil"
        default: return false
        }
    }

    /// RFC 3339 date-time, with or without fractional seconds.
    static func isDateTime(_ string: String) -> Bool {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return withFraction.date(from: string) != nil || ISO8601DateFormatter().date(from: string) != nil
    }
}
