import Foundation
import Testing
import TestSupport

/// Option handling of the `chatsuite` binary: answered before anything starts.
@Suite("chatsuite options")
struct CLIOptionsTests {
    /// Runs `chatsuite` with `arguments`; its exit status and output.
    func chatsuite(_ arguments: [String]) async throws -> (status: Int32?, output: String) {
        let process = try TestProcess(executable: "chatsuite", arguments: arguments)
        let status = try await process.waitForExit(timeout: .seconds(30))
        return (status, process.output)
    }

    @Test("jwt-keys as compose's keys service runs it: a pair once, the public key copied, a second run changes nothing")
    func jwtKeysForCompose() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let arguments = ["jwt-keys", "--out", folder.appendingPathComponent("private").path, "--public-out", folder.appendingPathComponent("public").path]
        func read(_ path: String) throws -> String { try String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8) }
        #expect(try await chatsuite(arguments).status == 0)
        let first = (try read("private/jwt-ed25519.pem"), try read("private/jwt-ed25519.pub.pem"), try read("public/jwt-ed25519.pub.pem"))
        #expect(first.0.hasPrefix("-----BEGIN PRIVATE KEY-----") && first.1.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(first.1 == first.2)
        let mode = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("private/jwt-ed25519.pem").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await chatsuite(arguments).status == 0)
        let second = (try read("private/jwt-ed25519.pem"), try read("public/jwt-ed25519.pub.pem"))
        #expect(second.0 == first.0 && second.1 == first.2, "the pair is kept")
    }

    @Test("--version prints the suite's version")
    func version() async throws {
        let (status, output) = try await chatsuite(["--version"])
        #expect(status == 0)
        #expect(output.wholeMatch(of: #/\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?\n/#) != nil, "got \(output)")
    }

    @Test(
        "--brokers is a bootstrap list everywhere; a count is --embedded-brokers",
        arguments: [
            ["dev", "--brokers", "3"],
            ["bench", "kafka", "--brokers", "1"],
            ["events", "tail", "auth.user.v1", "--brokers", "3"],
            ["loadgen", "--inject", "kafka", "--brokers", "2"],
        ])
    func brokersIsNeverACount(arguments: [String]) async throws {
        let (status, output) = try await chatsuite(arguments)
        #expect(status == 64, "a usage error: \(output)")
        #expect(output.contains("host:port"), "\(output)")
        #expect(output.contains("--embedded-brokers"), "\(output)")
    }

    @Test("an empty entry in --brokers is refused")
    func emptyBrokerEntry() async throws {
        let (status, output) = try await chatsuite(["events", "tail", "auth.user.v1", "--brokers", "127.0.0.1:9092,"])
        #expect(status == 64)
        #expect(output.contains("empty entry"), "\(output)")
    }

    @Test("the old embedded-broker count option is gone from broker and dev")
    func oldCountOptionIsGone() async throws {
        let (status, output) = try await chatsuite(["broker", "--brokers", "1"])
        #expect(status == 64, "\(output)")
        let help = try await chatsuite(["dev", "--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("--embedded-brokers <embedded-brokers>"))
        #expect(help.output.contains("--brokers <brokers>"))
        #expect(!help.output.contains("--kafka-brokers"))
    }

    @Test("loadgen reports a bad option as a usage error before connecting anywhere")
    func loadgenValidation() async throws {
        let (status, output) = try await chatsuite(["loadgen", "--inject", "kafka", "--gateway", "http://127.0.0.1:1"])
        #expect(status == 64)
        #expect(output.contains("--inject kafka needs --brokers"), "\(output)")
        let codec = try await chatsuite([
            "loadgen", "--inject", "kafka", "--brokers", "127.0.0.1:1", "--kafka-compression", "brotli", "--gateway", "http://127.0.0.1:1",
        ])
        #expect(codec.status == 64)
        #expect(codec.output.contains("--kafka-compression must be one of"), "\(codec.output)")
    }
}
