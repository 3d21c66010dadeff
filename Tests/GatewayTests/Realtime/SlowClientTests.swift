import Common
import Events
import Foundation
import HummingbirdTesting
import Kafka
import SuiteTesting
import Testing
import TestSupport

/// Clients that stop reading while large messages flow: the gateway bounds what it holds for
/// them in bytes, drops them when a write stalls, and everyone else keeps receiving promptly.
@Suite("Slow clients", .serialized)
struct SlowClientTests {
    @Test("10 Socket.IO sockets that never read while 40 messages of ~900 KB flow: each is closed by the server; two readers get every message promptly")
    func nonReadingSockets() async throws {
        let gatewayId = "gw-slow-\(UUID().uuidString.prefix(8).lowercased())"
        let environment = [
            "GATEWAY_ID": gatewayId, "GATEWAY_SOCKETIO_MAX_QUEUED_BYTES": "4194304", "GATEWAY_REALTIME_WRITE_TIMEOUT_MS": "2000",
            // No heartbeat expiry during the test: only the byte bound and the write timeout act.
            "GATEWAY_SOCKETIO_PING_INTERVAL_MS": "120000", "GATEWAY_SOCKETIO_PING_TIMEOUT_MS": "120000",
        ]
        try await Stack.run(gateway: environment) { s in
            let channel = UUID()
            let namespace = "/ws-channel-\(channel.uuidString.lowercased())"
            let port = try #require(s.client.port)
            let readers = try SlowReaders(port: port, namespace: namespace, stalled: 0, readers: 2)
            try await eventually("the readers joined", timeout: .seconds(30)) { !readers.lines("joined").isEmpty }
            let producer = try TestKafka.producer(s.cluster) { $0.compression = "none" }  // as chat-fanout produces deliveries
            let content = String(repeating: "가", count: 300_000)  // 900 000 bytes of UTF-8
            let sentAt = Locked<[String: Double]>([:])
            func send(_ count: Int) async throws {
                for i in 0..<count {
                    let id = MessageID(UUIDv7.generate())
                    let event = CloudEvent(
                        source: "test",
                        data: ChatEvents.ChannelMessageCreated(
                            messageId: id, workspaceId: WorkspaceID(UUID()), channelId: ChannelID(channel), channelName: "big",
                            sender: .init(userId: UserID(UUID()), email: "a@example.com", nickname: "n\(i)", profileImage: nil),
                            content: content, files: [], createdAt: Date()
                        ))
                    sentAt.withLock { $0[id.uuid.lowercased] = Date().timeIntervalSince1970 }
                    // Deliveries straight onto this gateway's partition (what chat-fanout would send).
                    _ = try await producer.sendAndAwait(
                        KafkaProducerMessage(
                            topic: Topic.gatewayDelivery.name, key: gatewayId, value: try EventCoding.encode(event),
                            headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: ChatEvents.ChannelMessageCreated.eventType)],
                            partition: GatewayEvents.deliveryPartition(for: gatewayId)
                        ))
                    try await Task.sleep(for: .milliseconds(250))
                }
            }
            /// The readers' latencies (seconds) for the messages after the first `skip` ones, sorted.
            func latencies(after skip: Int) -> [Double] {
                let sent = sentAt.value
                return readers.lines("event").dropFirst(skip * 2).compactMap { line -> Double? in
                    guard let id = line["id"] as? String, let at = line["at"] as? Double, let start = sent[id] else { return nil }
                    return at - start
                }.sorted()
            }
            func percentile(_ values: [Double], _ p: Double) -> Double { values.isEmpty ? .infinity : values[Int(Double(values.count - 1) * p)] }

            // Baseline: the same flow with nobody stalled.
            try await send(10)
            try await readers.waitForEvents(20)
            let baseline = latencies(after: 0)

            // Ten sockets that never read join; 40 more messages flow.
            let stalled = try SlowReaders(port: port, namespace: namespace, stalled: 10, readers: 0)
            try await eventually("the stalled sockets joined", timeout: .seconds(30)) { !stalled.lines("joined").isEmpty }
            try await send(40)
            try await readers.waitForEvents(100)
            let loaded = latencies(after: 10)
            #expect(Set(readers.lines("event").compactMap { $0["id"] as? String }) == Set(sentAt.value.keys))
            #expect(readers.lines("reader_closed").isEmpty, "\(readers.output.suffix(1000))")
            // Everyone else keeps their latency: the stalled sockets cost the readers at most a
            // little (the kernel copies what their buffers take before they stall).
            let (p50Base, p95Base, p50Loaded, p95Loaded) = (
                percentile(baseline, 0.5), percentile(baseline, 0.95), percentile(loaded, 0.5), percentile(loaded, 0.95)
            )
            print("slow clients: readers' latency p50 \(p50Base) → \(p50Loaded) s, p95 \(p95Base) → \(p95Loaded) s")
            #expect(
                p50Loaded <= 2 * p50Base + 0.25 && p95Loaded <= 2 * p95Base + 0.5,
                "p50 \(p50Base) → \(p50Loaded) s, p95 \(p95Base) → \(p95Loaded) s")

            let report = try await stalled.finish()
            #expect(report.count == 10 && report.allSatisfy { $0 }, "closed by the server: \(report)\n\(stalled.output.suffix(2000))")
            _ = try await readers.finish()
        }
    }
}

/// `clients/slow_readers.py`: Engine.IO v4 WebSocket clients of one namespace that never read
/// (`stalled`) or read and time every event (`readers`), observed through their JSON lines.
struct SlowReaders {
    let process: TestProcess
    let stopFile: String

    init(port: Int, namespace: String, stalled: Int, readers: Int) throws {
        let python = PythonSocketClient.repository.appendingPathComponent(".devdata/pyenv/bin/python").path
        let script = PythonSocketClient.repository.appendingPathComponent("Tests/GatewayTests/Realtime/clients/slow_readers.py").path
        stopFile = FileManager.default.temporaryDirectory.appendingPathComponent("slow-stop-\(UUID().uuidString)").path
        process = try TestProcess(
            path: python,
            arguments: [
                "-u", script, "--url", "http://127.0.0.1:\(port)", "--namespace", namespace,
                "--stalled", "\(stalled)", "--readers", "\(readers)", "--stop-file", stopFile,
            ])
    }

    var output: String { process.output }

    func lines(_ type: String) -> [[String: Any]] {
        process.output.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return nil }
            return object["type"] as? String == type ? object : nil
        }
    }

    func waitForEvents(_ count: Int) async throws {
        do {
            try await eventually("\(count) events at the readers", timeout: .seconds(90)) { lines("event").count >= count }
        } catch {
            Issue.record("client output: \(process.output.suffix(3000))")
            throw error
        }
    }

    /// Stops the clients; for the stalled sockets, whether the server had closed each.
    func finish() async throws -> [Bool] {
        _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
        try await eventually("the clients report", timeout: .seconds(60)) { !lines("done").isEmpty }
        _ = try await process.waitForExit(timeout: .seconds(10))
        try? FileManager.default.removeItem(atPath: stopFile)
        return lines("stalled").map { $0["closed"] as? Bool ?? false }
    }
}
