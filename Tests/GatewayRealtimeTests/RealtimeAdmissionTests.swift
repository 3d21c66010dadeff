import Common
import Events
import Foundation
import HummingbirdTesting
import HTTPTypes
import Kafka
import NIOCore
import NIOWebSocket
import SuiteTesting
import Testing
import TestSupport

/// What anonymous real-time clients can make the gateway do is bounded: handshakes and joins per
/// address, namespaces per session; and what they leave on the compacted topics is deleted.
@Suite("Real-time admission and compacted-topic hygiene", .serialized)
struct RealtimeAdmissionTests {
    static let handshake = "/socket.io/?EIO=4&transport=polling"

    static func sid(_ body: ByteBuffer) -> String {
        String(String(buffer: body).dropFirst(#"0{"sid":""#.count).prefix(20))
    }

    @Test("handshakes per address: a burst beyond the limit gets 429 with Engine.IO's error; native upgrades close with 4008; both recover")
    func handshakeLimit() async throws {
        let environment = ["GATEWAY_REALTIME_HANDSHAKE_BURST": "4", "GATEWAY_REALTIME_HANDSHAKE_RATE_PER_SECOND": "1"]
        try await Stack.run(gatewayEnvironment: environment) { s in
            var statuses: [Int] = []
            for _ in 0..<10 {
                let answer = try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil)
                statuses.append(Int(answer.status.code))
                if answer.status == .tooManyRequests { #expect(String(buffer: answer.body).contains("Too many requests")) }
            }
            // However slow the machine, at most 4 + elapsed seconds × 1 get through.
            #expect(statuses.filter { $0 == 200 }.count >= 4 && statuses.filter { $0 == 429 }.count >= 3, "\(statuses)")
            // The same address is refused on the native WebSocket too (tokens are shared).
            let native = NativeTestClient(port: try #require(s.client.port))
            let closed = try await native.closed()
            #expect(closed.code == WebSocketErrorCode(codeNumber: 4008), "\(String(describing: closed.code)) \(closed.reason)")
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil).status == .ok)
        }
    }

    @Test("namespaces per session are capped: joins beyond the cap get a connect error, the session stays usable")
    func namespaceCap() async throws {
        try await Stack.run(gatewayEnvironment: ["GATEWAY_SOCKETIO_MAX_NAMESPACES": "3"]) { s in
            let opened = try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil)
            let poll = "\(Self.handshake)&sid=\(Self.sid(opened.body))"
            let joins = (0..<5).map { _ in "40/ws-channel-\(UUID().uuidString.lowercased())," }
            let posted = try await s.client.execute(
                uri: poll, method: .post, headers: [.contentType: "text/plain;charset=UTF-8"], body: ByteBuffer(string: joins.joined(separator: "\u{1E}"))
            )
            #expect(posted.status == .ok)
            let answers = String(buffer: try await s.client.execute(uri: poll, method: .get, headers: [:], body: nil).body).split(separator: "\u{1E}")
            #expect(answers.filter { $0.hasPrefix("40/") }.count == 3, "\(answers)")
            #expect(answers.filter { $0.hasPrefix("44/") && $0.contains("Too many namespaces") }.count == 2, "\(answers)")
            // Leaving one makes room for another.
            let leave = String(joins[0].dropFirst(2))
            _ = try await s.client.execute(
                uri: poll, method: .post, headers: [.contentType: "text/plain;charset=UTF-8"], body: ByteBuffer(string: "41" + leave + "\u{1E}" + joins[4])
            )
            let after = String(buffer: try await s.client.execute(uri: poll, method: .get, headers: [:], body: nil).body)
            #expect(after.hasPrefix("40/"), "\(after)")
        }
    }

    @Test("a closed Socket.IO session and a withdrawn interest leave tombstones on their compacted topics")
    func tombstones() async throws {
        try await Stack.run(gatewayEnvironment: ["GATEWAY_ID": "gw-tomb-\(UUID().uuidString.prefix(8).lowercased())"]) { s in
            let opened = try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil)
            let sid = Self.sid(opened.body)
            let poll = "\(Self.handshake)&sid=\(sid)"
            let conversation = UUID().uuidString.lowercased()
            let text: [(String, String)] = [("40/ws-channel-\(conversation),", "join"), ("41/ws-channel-\(conversation),", "leave"), ("1", "close")]
            for (packet, _) in text {
                _ = try await s.client.execute(uri: poll, method: .post, headers: [.contentType: "text/plain;charset=UTF-8"], body: ByteBuffer(string: packet))
            }
            let sessionKey = sid
            let interestSuffix = "/\(conversation)"
            let found = try await Self.records(s.cluster, topics: [Topic.gatewaySession, Topic.gatewayInterest]) { records in
                records.contains { $0.key == sessionKey && $0.value == nil } && records.contains { $0.key.hasSuffix(interestSuffix) && $0.value == nil }
            }
            // Each tombstone comes after the key's last event.
            let session = found.filter { $0.key == sessionKey }
            #expect(session.last?.value == nil && session.count >= 3, "opened, closed, tombstone: \(session.count)")
            let interest = found.filter { $0.key.hasSuffix(interestSuffix) }
            #expect(interest.map { $0.value == nil } == [false, false, true], "announce, withdraw, tombstone")
        }
    }

    /// Records (key, value) of `topics` from their beginning, until `done` holds (20 s at most).
    static func records(
        _ cluster: EmbeddedKafkaCluster, topics: [Topic], until done: @escaping @Sendable ([(key: String, value: [UInt8]?)]) -> Bool
    ) async throws -> [(key: String, value: [UInt8]?)] {
        let partitions = topics.flatMap { topic in
            (0..<topic.partitions).map { TopicPartitionOffset(topic: topic.name, partition: Int32($0), offset: .beginning) }
        }
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-tombstones"), mode: .assignment(partitions)
            ),
            logger: TestKafka.logger
        )
        let seen = Locked<[(key: String, value: [UInt8]?)]>([])
        let reader = Task {
            for try await message in consumer.messages {
                seen.withLock { $0.append((message.keyString ?? "", message.value)) }
            }
        }
        defer { reader.cancel() }
        try await eventually("tombstones", timeout: .seconds(20)) { done(seen.value) }
        reader.cancel()
        await consumer.close()
        return seen.value
    }
}
