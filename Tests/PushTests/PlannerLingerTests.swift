import Common
import Database
import Events
import Foundation
import Kafka
import PostgresNIO
import PushApp
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

/// push's planner consumer lingers (`push.planner-linger-ms`): channel messages arriving within
/// the linger after a poll's first one are planned together, in one inbox transaction — the
/// batching behind part 9's "push −60 %" (docs/benchmarks.md). Without the linger each message
/// spaced out in time is a poll of its own. The transactions are read from the inbox rows' `xmin`.
@Suite("Push planner linger", .serialized)
struct PlannerLingerTests {
    /// Starts push alone on a fresh database and broker with `linger`, sends one warm-up message and
    /// then `count` messages `spacing` apart, and answers in how many transactions push's inbox
    /// recorded those `count`.
    static func transactions(linger: Int, count: Int, spacing: Duration) async throws -> Int {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let database = try await TestDatabase.create(prefix: "push")
        let producer = try TestKafka.producer(cluster)
        do {
            let environment = [
                "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": database.configuration.url, "LOG_LEVEL": "warning",
                "KAFKA_FETCH_WAIT_MS": "5", "PUSH_PLANNER_LINGER_MS": "\(linger)",
            ]
            let settings = ServiceSettings(
                serviceName: PushService.name, defaults: PushService.defaults, environment: environment, arguments: [PushService.name])
            let push = try await RunningService.start { try await PushApp.buildApplication(settings: settings, logger: TestKafka.logger) }
            let counted: Result<Int, any Error>
            do {
                counted = .success(
                    try await database.withClient { db -> Int in
                        // The group has joined and fetches at the end of the topic once the warm-up is planned.
                        let warmUp = try await send(producer)
                        try await eventually("the warm-up message is planned", timeout: .seconds(60)) { try await planned([warmUp], db) == 1 }
                        var ids: [UUID] = []
                        for _ in 0..<count {
                            ids.append(try await send(producer))
                            try await Task.sleep(for: spacing)
                        }
                        try await eventually("every message is planned", timeout: .seconds(30)) { try await planned(ids, db) == count }
                        let query: PostgresQuery = "SELECT count(DISTINCT xmin::text) FROM inbox WHERE consumer = 'push.messages' AND event_id = ANY(\(ids))"
                        for try await n in try await db.query(query).decode(Int64.self) { return Int(n) }
                        return 0
                    })
            } catch {
                counted = .failure(error)
            }
            // push stops before its database goes.
            try await push.stop()
            try await database.drop()
            return try counted.get()
        } catch {
            try? await database.drop()
            throw error
        }
    }

    /// One channel message on `chat.message.v1`, as chat's relay publishes it; its event id.
    static func send(_ producer: KafkaProducer) async throws -> UUID {
        let channel = ChannelID.generate()
        let sender = ChatEvents.Sender(userId: .generate(), email: "a@example.com", nickname: "a", profileImage: nil)
        let event = CloudEvent(
            source: "test-chat",
            data: ChatEvents.ChannelMessageCreated(
                messageId: .generate(), workspaceId: .generate(), channelId: channel, channelName: "general", sender: sender, content: "hello",
                files: [], createdAt: Date()))
        let headers = [
            KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased), KafkaHeader(key: CloudEventKafkaHeader.type, string: event.type),
        ]
        _ = try await producer.sendAndAwait(
            KafkaProducerMessage(topic: Topic.chatMessage.name, key: event.subject, value: try EventCoding.encode(event), headers: headers))
        return event.id
    }

    /// How many of `ids` push's planner has recorded in its inbox.
    static func planned(_ ids: [UUID], _ db: PostgresClient) async throws -> Int {
        for try await n in try await db.query("SELECT count(*) FROM inbox WHERE consumer = 'push.messages' AND event_id = ANY(\(ids))").decode(Int64.self) {
            return Int(n)
        }
        return 0
    }

    @Test("messages 30 ms apart with a 1 s linger: one transaction")
    func lingerGathersMessages() async throws {
        #expect(try await Self.transactions(linger: 1_000, count: 4, spacing: .milliseconds(30)) == 1)
    }

    @Test("messages 30 ms apart without a linger: several transactions")
    func withoutLingerEachAlone() async throws {
        #expect(try await Self.transactions(linger: 0, count: 4, spacing: .milliseconds(30)) > 1)
    }
}
