import Foundation
import Yams

/// Builds the JSON Schema (draft 2020-12) of each event type from docs/asyncapi.yaml: a message's
/// payload (the envelope `allOf` the type's overlay) with every component schema it uses copied
/// to `$defs`. The files in docs/schemas are exactly this output (`EventSchemaTests` compares;
/// `CHATSUITE_WRITE_SCHEMAS=1` rewrites them).
struct SchemaGenerator {
    static let dialect = "https://json-schema.org/draft/2020-12/schema"

    let components: [String: Any]
    /// Message key (`AuthUserRegistered`) → message object.
    let messages: [String: [String: Any]]
    /// Message key → the channels (topics) whose `subscribe` lists it.
    let channels: [String: Set<String>]

    init(asyncAPI url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        guard let root = try Yams.load(yaml: text) as? [String: Any], let c = root["components"] as? [String: Any],
            let schemas = c["schemas"] as? [String: Any], let messages = c["messages"] as? [String: [String: Any]]
        else { throw SchemaError("docs/asyncapi.yaml has no components.schemas / components.messages") }
        self.components = schemas
        self.messages = messages
        var channels: [String: Set<String>] = [:]
        for (topic, channel) in root["channels"] as? [String: Any] ?? [:] {
            let message = ((channel as? [String: Any])?["subscribe"] as? [String: Any])?["message"] as? [String: Any]
            let refs = (message?["oneOf"] as? [[String: Any]] ?? message.map { [$0] } ?? []).compactMap { $0["$ref"] as? String }
            for ref in refs { channels[String(ref.split(separator: "/").last ?? ""), default: []].insert(topic) }
        }
        self.channels = channels
    }

    /// Event type (the message `name`) → its schema document.
    func schemas() throws -> [String: [String: Any]] {
        var result: [String: [String: Any]] = [:]
        for key in messages.keys.sorted() {
            guard let message = messages[key], let name = message["name"] as? String, let payload = message["payload"] else {
                throw SchemaError("message \(key) has no name or payload")
            }
            guard result[name] == nil else { throw SchemaError("two messages are named \(name)") }
            let body = try Self.json(payload)
            var defs: [String: Any] = [:]
            try collect(body, into: &defs)
            var document: [String: Any] = [
                "$schema": Self.dialect,
                "title": name,
                "description": [message["summary"] as? String, "Generated from docs/asyncapi.yaml (components.messages.\(key)); do not edit."]
                    .compactMap { $0 }.joined(separator: " "),
                "$defs": defs,
            ]
            guard let payloadObject = Self.rewritingRefs(body) as? [String: Any] else { throw SchemaError("payload of \(key) is not an object") }
            for (k, v) in payloadObject { document[k] = v }
            result[name] = document
        }
        return result
    }

    /// Adds every component schema `value` refers to (transitively) to `defs`, refs rewritten.
    private func collect(_ value: Any, into defs: inout [String: Any]) throws {
        if let object = value as? [String: Any] {
            if let ref = object["$ref"] as? String {
                let prefix = "#/components/schemas/"
                guard ref.hasPrefix(prefix) else { throw SchemaError("unsupported $ref \(ref)") }
                let name = String(ref.dropFirst(prefix.count))
                if defs[name] == nil {
                    guard let target = components[name] else { throw SchemaError("$ref to missing schema \(name)") }
                    let body = try Self.json(target)
                    defs[name] = Self.rewritingRefs(body)
                    try collect(body, into: &defs)
                }
            }
            for v in object.values { try collect(v, into: &defs) }
        } else if let array = value as? [Any] {
            for v in array { try collect(v, into: &defs) }
        }
    }

    private static func rewritingRefs(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var out: [String: Any] = [:]
            for (k, v) in object {
                if k == "$ref", let ref = v as? String {
                    out[k] = ref.replacingOccurrences(of: "#/components/schemas/", with: "#/$defs/")
                } else {
                    out[k] = rewritingRefs(v)
                }
            }
            return out
        }
        if let array = value as? [Any] { return array.map(rewritingRefs) }
        return value
    }

    /// YAML values as JSON values (Yams gives dates for unquoted timestamps; JSON has strings).
    private static func json(_ value: Any) throws -> Any {
        switch value {
        case let object as [String: Any]:
            var out: [String: Any] = [:]
            for (k, v) in object { out[k] = try json(v) }
            return out
        case let object as [AnyHashable: Any]:
            var out: [String: Any] = [:]
            for (k, v) in object { out["\(k)"] = try json(v) }
            return out
        case let array as [Any]: return try array.map(json)
        case is String, is Bool, is Int, is Double: return value
        case let date as Date: return ISO8601DateFormatter().string(from: date)
        default: throw SchemaError("unsupported YAML value \(type(of: value))")
        }
    }

    static func encode(_ document: [String: Any]) throws -> Data {
        var data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        data.append(UInt8(ascii: "\n"))
        return data
    }
}

struct SchemaError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
