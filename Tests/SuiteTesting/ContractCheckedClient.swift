import Foundation
import GatewayApp
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Testing

/// A test client that holds every answer against docs/openapi.yaml (`APIContract`) and records a
/// test issue for each difference: a status the operation does not document, a JSON body off its
/// schema, a path the document lacks. Tests keep asserting what they assert; the document is
/// checked on the side by every whole-path test.
public struct ContractCheckedClient: TestClientProtocol {
    let base: any TestClientProtocol

    public init(_ base: any TestClientProtocol) { self.base = base }

    public var port: Int? { base.port }

    public func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestResponse {
        // Past the client's own 20 s and the gateway's 60 s upstream timeout: only a request the
        // server never answers reaches this (`withAnswerDeadline`).
        let base = self.base
        let response = try await withAnswerDeadline(.seconds(90), "\(method) \(uri)") {
            try await base.executeRequest(uri: uri, method: method, headers: headers, body: body)
        }
        // The REST surface; Socket.IO polling and health are documented elsewhere.
        guard uri.hasPrefix("/v1/") || uri.hasPrefix("/v2/"), !Self.isStudyPath(uri) else { return response }
        switch Self.contract(for: uri, headers: headers) {
        case .success(let contract):
            let problems = contract.violations(
                method: method.rawValue, uri: uri, status: Int(response.status.code), contentType: response.headers[.contentType],
                body: Data(buffer: response.body))
            for problem in problems { Issue.record("answer outside docs/openapi.yaml: \(problem)") }
        case .failure(let error):
            Issue.record("docs/openapi.yaml does not load: \(error)")
        }
        return response
    }

    /// Gen A's document for a Gen A request that it lists (a Gen A key, or a path only Gen A
    /// has); else the suite's (what the gateway answers as Gen B).
    static func contract(for uri: String, headers: HTTPFields) -> Result<APIContract, any Error> {
        let path = String(uri.split(separator: "?", maxSplits: 1).first ?? "")
        let speaksGenerationA = headers[HTTPField.Name("SesacKey")!] == Stack.generationAKey || GenerationA.isOwnPath(path)
        if speaksGenerationA, case .success(let generationA) = APIContract.generationA, generationA.template(for: path) != nil {
            return .success(generationA)
        }
        if speaksGenerationA, case .failure = APIContract.generationA { return APIContract.generationA }
        return APIContract.repository
    }

    /// The study app's surface (`/v1/user…`, `/v1/queue…`, `/v1/chat/…`): documented in
    /// docs/study-api.md (bare status codes, its own shapes), not in the OpenAPI document.
    static func isStudyPath(_ uri: String) -> Bool {
        let segments = (uri.split(separator: "?").first ?? "").split(separator: "/")
        return segments.count >= 2 && segments[0] == "v1" && ["user", "queue", "chat"].contains(segments[1])
    }
}
