import Events
import Foundation
import Kafka
import Testing
import TestSupport

@testable import GatewayApp

/// `SessionCheckpoints.readToEnd`: a resume waits until the session reader has applied what
/// `gateway.session.v1` held when the client asked, however far behind the reader is.
@Suite("Session checkpoints read to the topic's end")
struct SessionCheckpointsTests {
    private func checkpoint(_ session: Int, seq: Int) -> GatewayEvents.SessionCheckpoint {
        GatewayEvents.SessionCheckpoint(
            sessionId: "s-\(session)", gatewayId: "gw-old", userId: .generate(), openedAt: Date(), seq: seq, baseSeq: 0, conversations: [], marks: [],
            checkpointedAt: Date())
    }

    private func records(sessions: Range<Int>, seq: Int) throws -> [KafkaProducerMessage] {
        try sessions.map { session in
            let payload = checkpoint(session, seq: seq)
            let event = CloudEvent(source: "test-gateway", data: payload)
            return KafkaProducerMessage(
                topic: Topic.gatewaySession.name, key: payload.subject, value: try EventCoding.encode(event),
                headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: GatewayEvents.SessionCheckpoint.eventType)])
        }
    }

    @Test("asked before the reader started and while it reads 6 000 checkpoints: true once every one is applied, the latest of each session there at once")
    func readsToEnd() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        for seq in 1...3 {
            for result in await producer.sendAllAndAwait(try records(sessions: 0..<2_000, seq: seq)) { _ = try result.get() }
        }
        let client = KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-gateway")
        let checkpoints = SessionCheckpoints(client: client, fetchWaitMilliseconds: 5, retention: .seconds(600), logger: TestKafka.logger)
        #expect(checkpoints.checkpoint("s-1999") == nil)
        let asked = Task { await checkpoints.readToEnd(before: .now + .seconds(60)) }
        try await Task.sleep(for: .milliseconds(200))
        let running = Task { try await checkpoints.run() }
        defer { running.cancel() }
        #expect(await asked.value, "read to the end")
        for session in [0, 777, 1_999] {
            #expect(checkpoints.checkpoint("s-\(session)")?.seq == 3, "s-\(session): its latest checkpoint")
        }

        // Written after the reader caught up: the next question waits for it too.
        for result in await producer.sendAllAndAwait(try records(sessions: 0..<1, seq: 4)) { _ = try result.get() }
        #expect(await checkpoints.readToEnd(before: .now + .seconds(30)))
        #expect(checkpoints.checkpoint("s-0")?.seq == 4)
    }

    @Test("200 resumes asking at once share a few questions of the topic's ends, and each waits for what the topic held when it asked")
    func resumesShareTheirQuestions() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        for result in await producer.sendAllAndAwait(try records(sessions: 0..<2_000, seq: 1)) { _ = try result.get() }
        let client = KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-gateway")
        let checkpoints = SessionCheckpoints(client: client, fetchWaitMilliseconds: 5, retention: .seconds(600), logger: TestKafka.logger)
        let running = Task { try await checkpoints.run() }
        defer { running.cancel() }
        #expect(await checkpoints.readToEnd(before: .now + .seconds(60)))
        let before = checkpoints.endsQueriesAsked

        // A burst of resumes while a later checkpoint is being written.
        let later = try records(sessions: 0..<2_000, seq: 2)
        async let written = producer.sendAllAndAwait(later)
        let answers = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { await checkpoints.readToEnd(before: .now + .seconds(60)) } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        for result in await written { _ = try result.get() }
        #expect(answers.count == 200 && answers.allSatisfy { $0 })
        let asked = checkpoints.endsQueriesAsked - before
        #expect(asked >= 1 && asked <= 10, "\(asked) questions for 200 resumes")

        // Asked after the burst was written: waits for all of it.
        #expect(await checkpoints.readToEnd(before: .now + .seconds(30)))
        for session in [0, 1_999] { #expect(checkpoints.checkpoint("s-\(session)")?.seq == 2) }
    }

    @Test("the brokers gone: false at the deadline, not before and not much after")
    func brokersGone() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let client = KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-gateway")
        let checkpoints = SessionCheckpoints(client: client, fetchWaitMilliseconds: 5, retention: .seconds(600), logger: TestKafka.logger)
        cluster.setAllBrokersDown()
        let running = Task { try await checkpoints.run() }
        defer { running.cancel() }
        let start = ContinuousClock.now
        #expect(await checkpoints.readToEnd(before: start + .seconds(2)) == false)
        let took = ContinuousClock.now - start
        #expect(took >= .seconds(2) && took < .seconds(8), "\(took)")
    }
}
