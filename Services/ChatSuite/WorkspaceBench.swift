import ArgumentParser
import Foundation
import LoadGen
import NIOCore
import NIOHTTP1

/// `chatsuite bench workspace`: against a running suite, one owner creates a workspace with
/// `--channels` channels, then `--concurrency` clients (a) read the workspace detail (channels +
/// members, the WSX home screen's call) and (b) create channels (a write: transaction, row lock,
/// outbox, NOTIFY), each for `--seconds`, through the gateway.
struct WorkspaceBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "workspace", abstract: "Workspace reads and writes per second through a running gateway.")

    @OptionGroup var load: GatewayLoadOptions

    @Option(help: "Channels in the workspace before the read phase.")
    var channels: Int = 20

    func run() async throws {
        let client = load.client
        let tag = UUID().uuidString.prefix(8).lowercased()
        let token = try await client.joinBenchUser("bench", tag: tag)
        let created = try await client.send(.POST, "/v1/workspaces", token: token, json: #"{"name":"bench-\#(tag)"}"#)
        guard created.status == .ok, let workspace = client.json(created.body)?["workspace_id"] as? String else {
            throw ValidationError("workspace creation failed with HTTP \(created.status.code): \(String(buffer: created.body))")
        }
        for i in 0..<channels {
            _ = try await client.send(.POST, "/v1/workspaces/\(workspace)/channels", token: token, json: #"{"name":"seed-\#(i)"}"#)
        }
        let runner = load.runner
        let reads = try await runner.run { _, _ in
            try await client.send(.GET, "/v1/workspaces/\(workspace)", token: token).status == .ok
        }
        print(reads.line("GET /workspaces/{id} (\(channels + 1) channels)", concurrency: load.concurrency))
        let writes = try await runner.run { worker, iteration in
            try await client.send(.POST, "/v1/workspaces/\(workspace)/channels", token: token, json: #"{"name":"w\#(worker)-\#(iteration)"}"#).status == .ok
        }
        print(writes.line("POST /workspaces/{id}/channels", concurrency: load.concurrency))
    }
}
