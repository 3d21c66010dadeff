import Events
import Foundation
@testable import GatewayApp
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import OpenAPIKit
import PresenceApp
import PushApp
import ServiceCatalog
import ServiceKit
import SuiteTesting
import Testing

/// docs/openapi.yaml against what the suite really serves: the document is valid OpenAPI 3.1, the
/// routes every service registers (`GET /routes` on its own port) are exactly the documented
/// operations, the gateway routes each documented path to the service that registers it, and the
/// gateway serves the document itself.
@Suite("OpenAPI document")
struct APIDocumentTests {
    static let presence = StackService(.presence, defaults: PresenceService.defaults) {
        try await PresenceApp.buildApplication(settings: $0, logger: $1)
    }
    static let push = StackService(.push, defaults: PushService.defaults) {
        try await PushApp.buildApplication(settings: $0, logger: $1)
    }

    @Test("the documents load, validate, and name every operation once", arguments: ["openapi.yaml", "openapi-generation-a.yaml"])
    func loads(_ file: String) throws {
        let contract = try (file == "openapi.yaml" ? APIContract.repository : APIContract.generationA).get()
        let count = contract.operations.values.map(\.count).reduce(0, +)
        #expect(count > (file == "openapi.yaml" ? 80 : 30), "\(count) operations")
        var ids = Set<String>()
        for (_, item) in contract.document.paths {
            guard let item = item.pathItemValue else { continue }
            for endpoint in item.endpoints {
                let id = try #require(endpoint.operation.operationId, "\(endpoint.method) has no operationId")
                #expect(ids.insert(id).inserted, "operationId \(id) twice")
                #expect(endpoint.operation.responses.keys.contains { $0.rawValue == "200" }, "\(id) documents no 200")
            }
        }
    }

    @Test("every route a service registers is documented, every documented route is served by the service the gateway sends it to")
    func routesMatch() async throws {
        let contract = try APIContract.repository.get()
        // The gateway's own operations (not forwarded).
        let gatewayOwn: Set<String> = ["GET /v1/openapi.yaml", "GET /v1/schemas/{file}"]
        let documented = Set(contract.operations.flatMap { path, methods in methods.keys.map { "\($0) \(path)" } })
        // Gen A's routes are served under `/gena` (the gateway maps Gen A requests there) and
        // documented without it in docs/openapi-generation-a.yaml.
        let generationA = try APIContract.generationA.get()
        let documentedA = Set(generationA.operations.flatMap { path, methods in methods.keys.map { "\($0) /gena\(path)" } })
        // `study` serves the study app's surface (docs/study-api.md) under `/study`, which this
        // document does not describe; it is here because every upstream must be.
        try await Stack.run(services: [.auth, .workspace, .chat, Self.presence, .payment, Self.push, .study(env: [:])]) { stack in
            // Every service with client routes is here (a new one must be added above).
            #expect(Set(stack.services.keys) == Set(ServiceEntry.upstreams.map(\.name)))
            var registered: [String: String] = [:]  // "GET /v1/..." → service
            var registeredA: [String: String] = [:]  // "GET /gena/v1/..." → service
            for (name, client) in stack.services {
                let response = try await client.execute(uri: "/routes", method: .get)
                #expect(response.status == .ok)
                let routes = try JSONDecoder().decode([RegisteredRoute].self, from: Data(buffer: response.body))
                for route in routes where route.path.hasPrefix("/gena/v1/") {
                    registeredA["\(route.method) \(route.path)"] = name
                }
                for route in routes where route.path.hasPrefix("/v1/") || route.path.hasPrefix("/v2/") {
                    let key = "\(route.method) \(route.path)"
                    #expect(registered[key] == nil, "\(key) registered by \(registered[key] ?? "") and \(name)")
                    registered[key] = name
                }
            }
            #expect(registered.count > 80)
            let undocumented = Set(registered.keys).subtracting(documented).sorted()
            #expect(undocumented.isEmpty, "registered but not in docs/openapi.yaml: \(undocumented)")
            let unserved = documented.subtracting(registered.keys).subtracting(gatewayOwn).sorted()
            #expect(unserved.isEmpty, "in docs/openapi.yaml but no service registers it: \(unserved)")
            let undocumentedA = Set(registeredA.keys).subtracting(documentedA).sorted()
            #expect(undocumentedA.isEmpty, "registered but not in docs/openapi-generation-a.yaml: \(undocumentedA)")
            let unservedA = documentedA.subtracting(registeredA.keys).sorted()
            #expect(unservedA.isEmpty, "in docs/openapi-generation-a.yaml but no service registers it: \(unservedA)")

            // The gateway forwards each documented path to the service that serves it: a request
            // with sample ids reaches a service route (not the gateway's E97), and the catalog's
            // route table names that service.
            for key in (Array(registered.keys) + Array(registeredA.keys)).sorted() {
                let parts = key.split(separator: " ", maxSplits: 1)
                let concrete = String(parts[1]).replacingOccurrences(
                    of: #"\{[^}]+\}"#, with: "00000000-0000-0000-0000-000000000000", options: .regularExpression)
                let method = try #require(HTTPRequest.Method(String(parts[0])))
                let owner = RouteTable.suite.match(method: method, path: concrete)?.upstream
                let server = registered[key] ?? registeredA[key]
                #expect(owner == server, "\(key): the gateway's catalog routes it to \(owner ?? "nobody"), \(server ?? "") serves it")
            }
        }
    }

    @Test("answers off the document are caught: a missing property, a wrong type, an undocumented status or path")
    func checkerCatches() throws {
        let contract = try APIContract.repository.get()
        func problems(_ method: String, _ uri: String, _ status: Int, _ body: String, type: String? = "application/json") -> [String] {
            contract.violations(method: method, uri: uri, status: status, contentType: type, body: Data(body.utf8))
        }
        let member = #"{"user_id":"0190c6f2-0b5e-7000-8000-000000000001","email":"a@example.com","nickname":"새싹"}"#
        let uri = "/v1/users/0190c6f2-0b5e-7000-8000-000000000001"
        #expect(problems("GET", uri, 200, member).isEmpty)
        #expect(problems("GET", uri, 200, #"{"user_id":"0190c6f2-0b5e-7000-8000-000000000001","email":"a@example.com"}"#).count == 1)
        #expect(problems("GET", uri, 200, #"{"user_id":7,"email":"a@example.com","nickname":"n"}"#).count == 1)
        #expect(problems("GET", uri, 200, "[" + member + "]").count == 1)
        #expect(problems("GET", uri, 418, #"{"errorCode":"E11"}"#).count == 1)
        #expect(problems("GET", uri, 200, member, type: "text/plain").count == 1)
        #expect(problems("GET", "/v1/no/such/route", 200, "{}").count == 1)
        #expect(problems("GET", "/v1/no/such/route", 404, #"{"errorCode":"E97"}"#).isEmpty)
        #expect(problems("GET", uri, 400, #"{"errorCode":"E13"}"#).isEmpty)
        #expect(problems("GET", uri, 400, #"{"code":"E13"}"#).count == 1)
        // Literal segments win over parameters: my-channels is not a channel id.
        #expect(contract.template(for: "/v1/workspaces/abc/my-channels") == "/v1/workspaces/{workspace}/my-channels")
    }

    @Test("the gateway serves the document at /v1/openapi.yaml without keys")
    func served() async throws {
        try await Stack.run(services: []) { stack in
            let response = try await stack.client.execute(uri: "/v1/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            let served = String(buffer: response.body)
            #expect(served == (try String(contentsOf: APIContract.documentURL, encoding: .utf8)))
        }
    }

    @Test("the gateway serves each event type's JSON Schema at the path of its dataschema, and E97 for an unknown one")
    func eventSchemasServed() async throws {
        let schemas = APIContract.documentURL.deletingLastPathComponent().appendingPathComponent("schemas")
        try await Stack.run(services: []) { stack in
            for type in EventCatalog.payloadTypes {
                let path = try #require(URL(string: type.dataschema)?.path)
                #expect(path == "/v1/schemas/\(type.eventType).json")
                let response = try await stack.client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(response.headers[.contentType] == "application/schema+json")
                let file = try Data(contentsOf: schemas.appendingPathComponent(type.schemaFileName))
                #expect(Data(buffer: response.body) == file, "\(path) is not docs/schemas/\(type.schemaFileName)")
            }
            for unknown in ["/v1/schemas/auth.user.nope.json", "/v1/schemas/..%2Fopenapi.yaml", "/v1/schemas/auth.user.registered"] {
                let response = try await stack.client.execute(uri: unknown, method: .get)
                #expect(response.status == .notFound, "\(unknown)")
                #expect(String(buffer: response.body) == #"{"errorCode":"E97"}"#, "\(unknown)")
            }
        }
    }
}
