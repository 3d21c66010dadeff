import HTTPTypes
import NIOCore

// `TestResponse`'s memberwise initialiser is internal to HummingbirdTesting (tests build in
// debug, where every module is built for testing).
@testable import HummingbirdTesting

/// A client that opens a connection of its own for every request, to a live server's port.
///
/// The live test client has one HTTP/1.1 connection, on which the server answers requests one
/// after another: "concurrent" requests through it are queued, not concurrent, and each one's
/// 20 s read timeout runs while it waits behind the others (100 workspace creations, each a
/// Kafka saga, timed out that way on a loaded CI run). Requests meant to race go through this.
public struct OwnConnectionClient: TestClientProtocol {
    public let port: Int?
    let timeout: Duration

    public init(port: Int, timeout: Duration = .seconds(20)) {
        self.port = port
        self.timeout = timeout
    }

    public func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestResponse {
        let client = TestClient(host: "localhost", port: port ?? 0, configuration: .init(timeout: timeout))
        client.connect()
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

extension Stack {
    /// This stack with a client (contract-checked too) that opens a connection of its own for
    /// every request (`OwnConnectionClient`): for requests that must really run at once.
    public func onOwnConnections() -> Stack {
        var copy = self
        if let port = client.port { copy.client = ContractCheckedClient(OwnConnectionClient(port: port)) }
        return copy
    }
}
