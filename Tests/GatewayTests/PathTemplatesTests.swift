import SuiteTesting
import Testing

@testable import GatewayApp

@Suite("Metric route labels from the API document's path templates")
struct PathTemplatesTests {
    @Test("every documented path is a template; the most literal match wins; anything else is `unmatched`")
    func labels() throws {
        let templates = try APIDocument.load().pathTemplates
        // The same paths OpenAPIKit reads from the document, each its own label once filled in.
        let contract = try APIContract.repository.get()
        #expect(templates.count == contract.operations.count)
        for template in contract.operations.keys {
            let filled = template.split(separator: "/").map { $0.hasPrefix("{") ? "x1" : String($0) }.joined(separator: "/")
            #expect(templates.label(for: "/" + filled) == template, "\(template)")
        }
        #expect(templates.label(for: "/v1/friends/me") == "/v1/friends/me")
        #expect(templates.label(for: "/v1/friends/0190c7a4-0000-7000-8000-000000000000") == "/v1/friends/{id}")
        #expect(templates.label(for: "/v1/workspaces/abc/categories") == "/v1/workspaces/{workspace}/categories")
        #expect(templates.label(for: "/v1/workspaces/abc/categories/") == "/v1/workspaces/{workspace}/categories")
        #expect(templates.label(for: "/v1/no/such/path") == "unmatched")
        #expect(templates.label(for: "/v1/friends/a/b/c/d/e") == "unmatched")
    }

    @Test("the `paths:` section only, quoted keys unquoted")
    func parsing() {
        let yaml = """
            openapi: 3.1.0
            info:
              title: x
            paths:
              /v1/a/{id}:
                get: {}
              '/v1/b':
                post: {}
            components:
              schemas:
                /v1/not-a-path:
                  type: object
            """
        let templates = PathTemplates(openAPIYAML: Substring(yaml))
        #expect(templates.count == 2)
        #expect(templates.label(for: "/v1/a/1") == "/v1/a/{id}")
        #expect(templates.label(for: "/v1/b") == "/v1/b")
    }
}
