import Common
import Database
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import PostgresNIO
import ServiceKit
import SuiteTesting
import Testing
import TestSupport
import WorkspaceApp

/// `/health/ready` means the read models are current: every Kafka consumer of the service has its
/// assignment and processed what its partitions held then. Before, ready came as soon as
/// migrations ran, seconds before the consumers had even joined their groups: a user who had just
/// signed up could not be invited (E03) right after `chatsuite dev` printed "ready".
@Suite("Readiness waits for the consumers")
struct ReadinessTests {
    static let backlog = 300

    @Test("workspace answers ready only once its profile projection holds the auth.user.v1 backlog")
    func readyMeansCaughtUp() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        // Users who signed up before workspace started.
        let messages = try (0..<Self.backlog).map { i in
            let user = AuthEvents.UserRegistered(
                userId: .generate(), email: "backlog\(i)@example.com", nickname: "backlog\(i)", profileImage: nil, provider: nil, createdAt: Date()
            )
            return KafkaProducerMessage(topic: Topic.authUser.name, key: user.subject, value: try EventCoding.encode(CloudEvent(source: "auth", data: user)))
        }
        for result in await producer.sendAllAndAwait(messages) { _ = try result.get() }

        let db = try await TestDatabase.create(prefix: "ws")
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("workspace-files-\(db.name)").path
        let settings = ServiceSettings(
            serviceName: "workspace", defaults: WorkspaceService.defaults,
            environment: [
                "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
                "DATABASE_URL": db.configuration.url, "WORKSPACE_FILES_DIRECTORY": files,
            ], arguments: ["workspace"])
        let service = try await RunningService.start { try await WorkspaceApp.buildApplication(settings: settings, logger: TestDatabase.logger) }

        let outcome: (profiles: Int, probes: Int)
        do {
            outcome = try await db.withClient { client in
                let deadline = ContinuousClock.now + .seconds(90)
                var probes = 0
                while ContinuousClock.now < deadline {
                    probes += 1
                    let response = try await service.client.execute(uri: "/health/ready", method: .get, headers: [:], body: nil)
                    if response.status == .ok {
                        return (try await Self.profileCount(client), probes)
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                throw TimeoutError(what: "workspace ready")
            }
        } catch {
            try await service.stop()
            try? FileManager.default.removeItem(atPath: files)
            try await db.drop()
            throw error
        }
        try await service.stop()
        try? FileManager.default.removeItem(atPath: files)
        try await db.drop()
        #expect(outcome.profiles == Self.backlog, "ready with \(outcome.profiles) of \(Self.backlog) profiles (after \(outcome.probes) probes)")
    }

    static func profileCount(_ client: PostgresClient) async throws -> Int {
        for try await count in try await client.query("SELECT count(*) FROM user_profiles WHERE email LIKE 'backlog%'").decode(Int64.self) {
            return Int(count)
        }
        return 0
    }
}
