import AsyncHTTPClient
import ServiceLifecycle

/// Shuts an HTTP client down after the server drained (add it with `ServicePlatform.addService`).
public struct HTTPClientService: Service {
    public let client: HTTPClient

    public init(client: HTTPClient) { self.client = client }

    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
