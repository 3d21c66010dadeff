import Events
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

/// The JSON Schema of every event type (docs/schemas, shipped in the gateway's resources), served
/// at `GET /v1/schemas/<type>.json` without keys: the CloudEvents `dataschema` of each event
/// points here (`events.schema-base-url`). An unknown file name is E97 (HTTP 404).
struct EventSchemaDocuments: Sendable {
    let files: [String: ByteBuffer]

    /// Reads the schemas from the gateway's resource bundle; a build without one for every type of
    /// the event catalog does not start.
    static func load() throws -> EventSchemaDocuments {
        guard let directory = Bundle.module.url(forResource: "schemas", withExtension: nil) else {
            throw StartupError("the event schemas (schemas/) are missing from the gateway's resources")
        }
        var files: [String: ByteBuffer] = [:]
        for type in EventCatalog.payloadTypes {
            let url = directory.appendingPathComponent(type.schemaFileName)
            guard let data = try? Data(contentsOf: url) else {
                throw StartupError("the gateway's resources have no schema \(type.schemaFileName)")
            }
            files[type.schemaFileName] = ByteBuffer(bytes: data)
        }
        return EventSchemaDocuments(files: files)
    }

    func addRoute(to v1: some RouterMethods<GatewayRequestContext>) {
        let files = self.files
        v1.get("schemas/{file}") { _, context in
            guard let name = context.parameters.get("file"), let bytes = files[name] else { throw APIError.unknownRoute }
            var headers = HTTPFields()
            headers[.contentType] = "application/schema+json"
            headers[.cacheControl] = "public, max-age=300"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: bytes))
        }
    }
}
