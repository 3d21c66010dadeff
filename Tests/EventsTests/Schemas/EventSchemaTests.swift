import Events
import Foundation
import Testing

/// docs/schemas (one JSON Schema per event type, served by the gateway) against the code and
/// docs/asyncapi.yaml: every type of `EventCatalog` has a schema generated from the AsyncAPI
/// document, and what the Swift encoder writes for a sample of each type validates against it,
/// with the schema's required keys exactly the type's non-optional properties.
@Suite("Event JSON Schemas")
struct EventSchemaTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let schemaDirectory = root.appendingPathComponent("docs/schemas")
    static let asyncAPI = root.appendingPathComponent("docs/asyncapi.yaml")

    static func schema(_ type: any EventPayload.Type) throws -> [String: Any] {
        let url = schemaDirectory.appendingPathComponent(type.schemaFileName)
        let data = try Data(contentsOf: url)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(url.path) is not a JSON object")
    }

    @Test("the catalog lists each type once, and docs/asyncapi.yaml has exactly the catalog's types on their topics")
    func catalogMatchesAsyncAPI() throws {
        let names = EventCatalog.payloadTypes.map { $0.eventType }
        #expect(Set(names).count == names.count, "a type is listed twice")
        let generator = try SchemaGenerator(asyncAPI: Self.asyncAPI)
        var documented: [String: Set<String>] = [:]  // type → topics listing it
        for (key, message) in generator.messages {
            let name = try #require(message["name"] as? String)
            documented[name] = generator.channels[key]
        }
        #expect(
            Set(documented.keys) == Set(names),
            "asyncapi only: \(Set(documented.keys).subtracting(names)); code only: \(Set(names).subtracting(documented.keys))")
        for type in EventCatalog.payloadTypes {
            let topics = documented[type.eventType] ?? []
            #expect(topics.contains(type.topic.name), "\(type.eventType) is on \(type.topic.name), asyncapi lists it on \(topics.sorted())")
        }
    }

    @Test("docs/schemas holds exactly the schemas generated from docs/asyncapi.yaml (CHATSUITE_WRITE_SCHEMAS=1 rewrites them)")
    func filesAreGenerated() throws {
        let generated = try SchemaGenerator(asyncAPI: Self.asyncAPI).schemas()
        let write = ProcessInfo.processInfo.environment["CHATSUITE_WRITE_SCHEMAS"] == "1"
        var expectedFiles = Set<String>()
        for type in EventCatalog.payloadTypes {
            let document = try #require(generated[type.eventType], "no message for \(type.eventType) in docs/asyncapi.yaml")
            let file = Self.schemaDirectory.appendingPathComponent(type.schemaFileName)
            expectedFiles.insert(type.schemaFileName)
            let bytes = try SchemaGenerator.encode(document)
            if write { try bytes.write(to: file) }
            let onDisk = try Data(contentsOf: file)
            // Compared as canonical JSON, so the platform's pretty-printing does not matter.
            let canonical = try SchemaGenerator.encode(try #require(try JSONSerialization.jsonObject(with: onDisk) as? [String: Any]))
            #expect(canonical == bytes, "\(type.schemaFileName) differs from docs/asyncapi.yaml; run with CHATSUITE_WRITE_SCHEMAS=1")
        }
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: Self.schemaDirectory.path))
        #expect(present == expectedFiles, "stray: \(present.subtracting(expectedFiles).sorted()); missing: \(expectedFiles.subtracting(present).sorted())")
    }

    @Test("a sample of every type, as the encoder writes it, validates against its schema")
    func samplesValidate() throws {
        let samples = EventSamples.all()
        let sampled = samples.map { type(of: $0).eventType }
        #expect(Set(sampled) == Set(EventCatalog.payloadTypes.map { $0.eventType }), "types without a sample")
        for sample in samples {
            let type = type(of: sample)
            let validator = SchemaValidator(root: try Self.schema(type))
            let event = try JSONSerialization.jsonObject(with: Data(try EventSamples.encoded(sample)))
            let problems = validator.problems(event)
            #expect(problems.isEmpty, "\(type.eventType): \(problems)")
        }
    }

    @Test("every sample decodes back to itself (the lower-case UUID encoders included)")
    func samplesRoundTrip() throws {
        func roundTrip<P: EventPayload>(_ payload: P) throws -> Bool {
            let event = CloudEvent(source: "test", data: payload)
            return try EventCoding.decode(P.self, from: try EventCoding.encode(event)) == event
        }
        for sample in EventSamples.all() {
            #expect(try roundTrip(sample), "\(type(of: sample).eventType)")
        }
    }

    @Test("each schema's data requires exactly the type's non-optional properties and declares all of them")
    func requiredKeysMatchTheSwiftTypes() throws {
        for sample in EventSamples.all() {
            let type = type(of: sample)
            let data = try Self.dataSchema(type)
            var required = Set<String>()
            var all = Set<String>()
            for child in Mirror(reflecting: sample).children {
                guard let label = child.label else { continue }
                all.insert(label)
                if Mirror(reflecting: child.value).displayStyle != .optional { required.insert(label) }
            }
            #expect(Set(data["required"] as? [String] ?? []) == required, "\(type.eventType): required")
            #expect(Set((data["properties"] as? [String: Any] ?? [:]).keys) == all, "\(type.eventType): properties")
        }
    }

    @Test("the validator catches a missing key, a wrong type, an upper-case id, an undeclared key and a wrong constant")
    func validatorCatches() throws {
        let sample = AuthEvents.UserRegistered(
            userId: UserID.generate(), email: "a@b.c", nickname: "n", profileImage: nil, provider: nil, createdAt: Date())
        let validator = SchemaValidator(root: try Self.schema(AuthEvents.UserRegistered.self))
        let event = try #require(try JSONSerialization.jsonObject(with: Data(try EventSamples.encoded(sample))) as? [String: Any])
        #expect(validator.problems(event).isEmpty)
        func changed(_ edit: (inout [String: Any]) -> Void) -> [String] {
            var data = event["data"] as? [String: Any] ?? [:]
            edit(&data)
            var copy = event
            copy["data"] = data
            return validator.problems(copy)
        }
        #expect(changed { $0["email"] = nil }.count == 1)
        #expect(changed { $0["email"] = 5 }.count == 1)
        #expect(changed { $0["email"] = true }.count == 1)
        #expect(changed { $0["userId"] = ($0["userId"] as? String)?.uppercased() }.count == 1)
        #expect(changed { $0["phone"] = "010" }.count == 1)
        var wrongType = event
        wrongType["type"] = "auth.user.deleted"
        #expect(validator.problems(wrongType).count == 1)
        var wrongSchema = event
        wrongSchema["dataschema"] = "urn:chatsuite:event:auth.user.registered:v1"
        #expect(!validator.problems(wrongSchema).isEmpty)
    }

    @Test("every personal-data path names a property of its type's data schema")
    func personalDataPathsExist() throws {
        for (eventType, paths) in EventPersonalData.fields {
            let type = try #require(EventCatalog.payloadType(named: eventType), "\(eventType) is not in the catalog")
            let root = try Self.schema(type)
            for path in paths {
                var schema = try Self.dataSchema(type)
                for (i, component) in path.split(separator: ".").enumerated() {
                    let property = (schema["properties"] as? [String: Any])?[String(component)] as? [String: Any]
                    let found = try #require(property, "\(eventType): \(path) has no \(component)")
                    if i < path.split(separator: ".").count - 1 { schema = Self.resolved(found, root: root) }
                }
            }
        }
        #expect(Set(EventPersonalData.topics.map(\.name)) == ["auth.user.v1", "chat.message.v1", "gateway.session.v1", "study.v1"])
    }

    @Test("dataschema is the URL of the type's schema file")
    func dataschemaNamesTheFile() throws {
        for type in EventCatalog.payloadTypes {
            #expect(type.dataschema == EventSchemaLocation.baseURL + "/" + type.schemaFileName)
            #expect(type.schemaFileName == "\(type.eventType).json")
        }
        #expect(EventSchemaLocation.fileName(eventType: "a.b", version: 2) == "a.b.v2.json")
    }

    /// The schema of `data`: the overlay's `data` property, through its `$ref`.
    static func dataSchema(_ type: any EventPayload.Type) throws -> [String: Any] {
        let root = try schema(type)
        let overlay = try #require((root["allOf"] as? [[String: Any]])?.last)
        let data = try #require((overlay["properties"] as? [String: Any])?["data"] as? [String: Any])
        return resolved(data, root: root)
    }

    /// A property's schema with `$ref` and a single `allOf` followed to the definition.
    static func resolved(_ schema: [String: Any], root: [String: Any]) -> [String: Any] {
        if let ref = schema["$ref"] as? String, let defs = root["$defs"] as? [String: Any],
            let target = defs[String(ref.dropFirst("#/$defs/".count))] as? [String: Any]
        {
            return resolved(target, root: root)
        }
        if let all = schema["allOf"] as? [[String: Any]], all.count == 1, let only = all.first { return resolved(only, root: root) }
        return schema
    }
}
