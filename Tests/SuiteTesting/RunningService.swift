import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// A service application running in the background on a real port until `stop()` — which shuts
/// it down gracefully (consumers leave their groups, HTTP drains, Postgres closes) — so a test
/// can take a service away mid-saga and start it again on the same database.
public struct RunningService: Sendable {
    public let client: any TestClientProtocol
    private let task: Task<Void, any Error>
    private let stopSignal: AsyncStream<Void>.Continuation

    public static func start(_ make: @escaping @Sendable () async throws -> any ApplicationProtocol) async throws -> RunningService {
        let (clients, clientReady) = AsyncStream.makeStream(of: (any TestClientProtocol).self)
        let (stops, stopSignal) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            defer { clientReady.finish() }
            let app = try await make()
            try await app.test(.live) { client in
                clientReady.yield(client)
                for await _ in stops {}
            }
        }
        var iterator = clients.makeAsyncIterator()
        guard let client = await iterator.next() else {
            try await task.value
            throw StartFailed()
        }
        return RunningService(client: client, task: task, stopSignal: stopSignal)
    }

    /// Shuts the service down and waits until it has stopped.
    public func stop() async throws {
        stopSignal.finish()
        try await task.value
    }

    public struct StartFailed: Error {}
}
