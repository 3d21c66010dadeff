@testable import GatewayApp
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
        try await Stack.run(gateway: environment) { s in
            // 30 at once: however slow the machine, at most 4 + elapsed seconds × 1 get through.
            let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for _ in 0..<30 {
                    group.addTask {
                        let answer = try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil)
                        return (Int(answer.status.code), String(buffer: answer.body))
                    }
                }
                var out: [(Int, String)] = []
                for try await answer in group { out.append(answer) }
                return out
            }
            let statuses = answers.map(\.0)
            #expect(statuses.filter { $0 == 200 }.count >= 4 && statuses.filter { $0 == 429 }.count >= 10, "\(statuses)")
            #expect(answers.filter { $0.0 == 429 }.allSatisfy { $0.1.contains("Too many requests") })
            // The same address is refused on the native WebSocket too (the tokens are shared):
            // ten at once, with the bucket empty, cannot all get one.
            let natives = (0..<10).map { _ in NativeTestClient(port: s.client.port ?? 0) }
            var codes: [String] = []
            for native in natives {
                // Either greeted (accepted) or closed; whichever comes first.
                let deadline = ContinuousClock.now + .seconds(20)
                var outcome = "no answer"
                while ContinuousClock.now < deadline {
                    if let closed = try? await native.closed(timeout: .milliseconds(100)) {
                        outcome = closed.code.map { "\($0)" } ?? "closed"
                        break
                    }
                    if native.frames.contains(where: { $0["op"] as? String == "hello" }) {
                        outcome = "accepted"
                        break
                    }
                }
                codes.append(outcome)
                await native.kill()
            }
            #expect(codes.contains("\(WebSocketErrorCode(codeNumber: 4008))"), "\(codes)")
            // And on STOMP, in its terms: an ERROR frame, then close 1008.
            let stomps = (0..<10).map { _ in StompTestClient(port: s.client.port ?? 0) }
            var refused = 0
            for stomp in stomps {
                if let closed = try? await stomp.closed(timeout: .seconds(5)), closed.code == .policyViolation,
                    stomp.received.contains(where: { $0.command == .error && $0.headers["message"] == "too many connections from this address" })
                {
                    refused += 1
                }
                await stomp.stop()
            }
            #expect(refused > 0)
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(try await s.client.execute(uri: Self.handshake, method: .get, headers: [:], body: nil).status == .ok)
        }
    }

    @Test("namespaces per session are capped: joins beyond the cap get a connect error, the session stays usable")
    func namespaceCap() async throws {
        try await Stack.run(gateway: ["GATEWAY_SOCKETIO_MAX_NAMESPACES": "3"]) { s in
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
        try await Stack.run(gateway: ["GATEWAY_ID": "gw-tomb-\(UUID().uuidString.prefix(8).lowercased())"]) { s in
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

    /// Records (key, value) of `topics` from their beginning, until `done` holds (`timeout` at most).
    static func records(
        _ cluster: EmbeddedKafkaCluster, topics: [Topic], timeout: Duration = .seconds(20),
        until done: @escaping @Sendable ([(key: String, value: [UInt8]?)]) -> Bool
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
        try await eventually("records of \(topics.map(\.name))", timeout: timeout) { done(seen.value) }
        reader.cancel()
        await consumer.close()
        return seen.value
    }
}
