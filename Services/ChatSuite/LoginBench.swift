import ArgumentParser
import Foundation
import LoadGen
import NIOCore
import NIOHTTP1

/// `chatsuite bench login`: joins one user, then logs in from `--concurrency` clients for
/// `--seconds` through the gateway and reports logins/s and latency percentiles.
struct LoginBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "login", abstract: "Email logins per second through a running gateway.")

    @OptionGroup var load: GatewayLoadOptions

    func run() async throws {
        let client = load.client
        let email = "bench-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let password = "bench password 1"
        let join = try await client.send(.POST, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(password)","nickname":"bench"}"#)
        guard join.status == .ok else { throw ValidationError("join failed with HTTP \(join.status.code)") }
        let body = #"{"email":"\#(email)","password":"\#(password)"}"#
        let result = try await load.runner.run { _, _ in
            try await client.send(.POST, "/v1/users/login", json: body).status == .ok
        }
        print(result.line("logins", concurrency: load.concurrency))
    }
}
