import HTTPTypes
import NIOCore

// `TestResponse`'s memberwise initialiser is internal to HummingbirdTesting (tests build in
// debug, where every module is built for testing).
@testable import HummingbirdTesting

/// The live test client gives up on a request after 20 s without a byte of the answer. A 5 MB
/// multipart upload takes longer than that in a debug build on two busy cores: MultipartKit's
/// parser walks the body byte by byte through unspecialised generic code (28 % of the test process
/// in a profile of `AttachmentTests`; release builds are not affected). Such requests go through a
/// client of their own with a longer read timeout, to the same live server.
extension TestClientProtocol {
    public func executeUnhurried(
        uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil, timeout: Duration = .seconds(180)
    ) async throws -> TestResponse {
        guard let port else { return try await execute(uri: uri, method: method, headers: headers, body: body) }
        let client = TestClient(host: "localhost", port: port, configuration: .init(timeout: timeout))
        client.connect()
        var headers = headers
        headers[.connection] = "keep-alive"
        do {
            let response = try await client.execute(.init(uri, method: method, authority: "localhost", headers: headers, body: body))
            try await client.shutdown()
            return TestResponse(head: response.head, body: response.body ?? ByteBuffer(), trailerHeaders: response.trailerHeaders)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
