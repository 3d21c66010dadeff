import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1

/// `chatsuite bench login`: joins one user, then logs in from `--concurrency` clients for
/// `--seconds` through the gateway and reports logins/s and latency percentiles.
struct LoginBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "login", abstract: "Email logins per second through a running gateway.")

    @Option(help: "Gateway base URL.")
    var gateway: String = "http://127.0.0.1:8080"

    @Option(help: "SesacKey header value.")
    var sesacKey: String = "dev-key"

    @Option(help: "Concurrent clients.")
    var concurrency: Int = 8

    @Option(help: "Duration in seconds.")
    var seconds: Int = 10

    func run() async throws {
        let client = GatewayClient(base: gateway, sesacKey: sesacKey)
        let email = "bench-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let password = "bench password 1"
        let join = try await client.send(.POST, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(password)","nickname":"bench"}"#)
        guard join.status == .ok else { throw ValidationError("join failed with HTTP \(join.status.code)") }
        let body = #"{"email":"\#(email)","password":"\#(password)"}"#
        let result = try await LoadRunner(concurrency: concurrency, duration: .seconds(seconds)).run { _, _ in
            try await client.send(.POST, "/v1/users/login", json: body).status == .ok
        }
        print(result.line("logins", concurrency: concurrency))
    }
}
