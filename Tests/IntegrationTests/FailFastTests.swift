import AccessTokens
import Common
import Foundation
import Kafka
import ServiceKit
import Testing
import TestSupport

@Suite("Bad configuration fails fast with one clear line")
struct FailFastTests {
    @Test("unreachable database: exit 1 naming the database, within the startup timeout")
    func unreachableDatabase() async throws {
        let cluster = try TestKafka.catalogCluster()
        let process = try TestProcess(
            executable: "auth",
            environment: [
                "KAFKA_BROKERS": cluster.bootstrapServers,
                "DATABASE_URL": "postgres://postgres:secret-pw@127.0.0.1:1/chatsuite_auth",
                "JWT_PRIVATE_KEY": try JWTKeyPEM.newEd25519().privateKey,
                "DATABASE_STARTUP_TIMEOUT_SECONDS": "3",
                "HTTP_PORT": String(Int.random(in: 40_000..<50_000)),
                "LOG_LEVEL": "critical",
            ])
        let started = ContinuousClock.now
        let status = try await process.waitForExit(timeout: .seconds(30))
        #expect(status == 1)
        #expect(ContinuousClock.now - started < .seconds(15))
        let lines = process.output.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(process.output)")
        #expect(process.output.hasPrefix("auth: error: database postgres://postgres@127.0.0.1:1/chatsuite_auth is not reachable"))
        #expect(!process.output.contains("secret-pw"), "the password is never printed")
        withExtendedLifetime(cluster) {}
    }

    @Test("bad broker address: exit 1 naming the brokers")
    func badBroker() async throws {
        let process = try TestProcess(
            executable: "chat-fanout",
            environment: [
                "KAFKA_BROKERS": "127.0.0.1:1",
                "KAFKA_STARTUP_TIMEOUT_SECONDS": "3",
                "HTTP_PORT": String(Int.random(in: 40_000..<50_000)),
                "LOG_LEVEL": "critical",
            ])
        let status = try await process.waitForExit(timeout: .seconds(30))
        #expect(status == 1)
        let lines = process.output.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(process.output)")
        #expect(process.output.hasPrefix("chat-fanout: error: Kafka at 127.0.0.1:1 is not usable"))
    }

    @Test("malformed database URL: exit 1 explaining the expected form")
    func malformedDatabaseURL() async throws {
        let cluster = try TestKafka.catalogCluster()
        let process = try TestProcess(
            executable: "payment",
            environment: [
                "KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": "mysql://nope", "LOG_LEVEL": "critical",
                "HTTP_PORT": String(Int.random(in: 40_000..<50_000)),
            ])
        #expect(try await process.waitForExit(timeout: .seconds(30)) == 1)
        #expect(process.output.contains("invalid database URL"))
        withExtendedLifetime(cluster) {}
    }
}

@Suite("Missing secrets fail fast")
struct MissingSecretTests {
    @Test("auth without a signing key: exit 1 naming the setting")
    func authWithoutKey() async throws {
        let process = try TestProcess(
            executable: "auth",
            environment: [
                "KAFKA_BROKERS": "127.0.0.1:1", "DATABASE_URL": "postgres://u:p@127.0.0.1:1/db", "LOG_LEVEL": "critical",
            ])
        #expect(try await process.waitForExit(timeout: .seconds(20)) == 1)
        #expect(process.output.contains("jwt.private-key is not set (JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE)"))
    }

    @Test("gateway without app keys: exit 1 naming the setting")
    func gatewayWithoutKeys() async throws {
        let process = try TestProcess(
            executable: "gateway",
            environment: [
                "KAFKA_BROKERS": "127.0.0.1:1", "JWT_PUBLIC_KEY": try JWTKeyPEM.newEd25519().publicKey, "LOG_LEVEL": "critical",
            ])
        #expect(try await process.waitForExit(timeout: .seconds(20)) == 1)
        #expect(process.output.contains("sesac.keys"))
    }
}
