import Common
import Events
import Foundation
import Kafka
import Testing
import TestSupport

@Suite("chatsuite events tail")
struct EventsTailTests {
    @Test("prints each event of a topic as one JSON line")
    func tailsEvents() async throws {
        let cluster = try TestKafka.catalogCluster()
        let producer = try TestKafka.producer(cluster)
        var ids: [UserID] = []
        for i in 0..<3 {
            let id = UserID.generate()
            ids.append(id)
            let event = CloudEvent(source: "auth", data: AuthEvents.UserDeleted(userId: id))
            _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: Topic.authUser.name, key: "\(i)", value: try EventCoding.encode(event)))
        }
        let tail = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "events", "tail", Topic.authUser.name, "--brokers", cluster.bootstrapServers, "--from-beginning", "--max", "3", "--seconds", "30",
            ])
        #expect(try await tail.waitForExit(timeout: .seconds(40)) == 0)
        let lines = tail.output.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(lines.count == 3)
        let decoded = try lines.map { try EventCoding.decode(AuthEvents.UserDeleted.self, from: Array($0.utf8)).data.userId }
        #expect(Set(decoded) == Set(ids))
    }

    @Test("an unknown topic is a clear error")
    func unknownTopic() async throws {
        let cluster = try TestKafka.cluster()
        let tail = try TestProcess(executable: "chatsuite", arguments: ["events", "tail", "nope.v1", "--brokers", cluster.bootstrapServers])
        #expect(try await tail.waitForExit(timeout: .seconds(30)) != 0)
        #expect(tail.output.contains("unknown topic nope.v1"))
        withExtendedLifetime(cluster) {}
    }
}
