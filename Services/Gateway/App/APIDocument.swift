import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

/// The suite's OpenAPI document (docs/openapi.yaml, shipped in the gateway's resources), served
/// at `GET /v1/openapi.yaml` without keys: it describes the API and holds no secret.
struct APIDocument: Sendable {
    let bytes: ByteBuffer

    /// Reads the document from the gateway's resource bundle; a build without it does not start.
    static func load() throws -> APIDocument {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml") else {
            throw StartupError("the OpenAPI document (openapi.yaml) is missing from the gateway's resources")
        }
        return APIDocument(bytes: ByteBuffer(bytes: try Data(contentsOf: url)))
    }

    /// Its path templates, for the request metrics' route label.
    var pathTemplates: PathTemplates { PathTemplates(openAPIYAML: Substring(String(buffer: bytes))) }

    func addRoute(to v1: some RouterMethods<GatewayRequestContext>) {
        let bytes = self.bytes
        v1.get("openapi.yaml") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/yaml; charset=utf-8"
            headers[.cacheControl] = "public, max-age=300"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: bytes))
        }
    }
}
