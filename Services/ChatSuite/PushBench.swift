import ArgumentParser
import AsyncHTTPClient
import Common
import Database
import Events
import Foundation
import Hummingbird
import Kafka
import Logging
import Messaging
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import ServiceCatalog

/// `chatsuite bench push`: notifications per second and commit → provider latency for messages to
/// a channel of `--recipients` offline members, each with one FCM token. Self-contained: an
/// embedded Kafka broker, a fresh database on the given PostgreSQL server, the built `push`
/// executable, and a fake FCM (OAuth2 token + HTTP v1 send, accepting everything) in this process.
/// The read models are fed by events produced straight to Kafka (no sign-ups).
struct PushBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "push", abstract: "Push notifications per second and commit → provider latency.")

    @Option(help: "Admin URL of a PostgreSQL server (e.g. from `chatsuite postgres start`; secret).")
    var databaseURL: String

    @Option(help: "Offline members of the channel, one FCM token each.")
    var recipients: Int = 10_000

    @Option(help: "Messages posted to the channel, one after another.")
    var messages: Int = 3

    @Option(help: "push.concurrency of the push process.")
    var concurrency: Int = 32

    @Option(help: "Port of the fake FCM.")
    var fcmPort: Int = 18_555

    func run() async throws {
        var logger = Logger(label: "chatsuite.bench.push")
        logger.logLevel = .warning
        let run = UUID().uuidString.prefix(8).lowercased()
        // Kafka and the database.
        let bench = try await BenchBackbone(databaseURL: databaseURL, prefix: "bench_push", logger: logger)

        // The fake FCM.
        let fake = BenchFCM()
        let router = Router()
        router.post("token") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"access_token":"bench","expires_in":3600}"#)))
        }
        router.post("v1/projects/:project/messages:send") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            fake.received(Data(buffer: body))
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"name":"projects/bench/messages/1"}"#)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: fcmPort)))
        let fcmTask = Task { try await app.runService() }
        defer { fcmTask.cancel() }

        // A service-account key (the fake does not check it; push signs with it as with Google's).
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("bench-fcm-\(run).pem").path
        try ProcessRunner.run("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        let account: [String: String] = [
            "type": "service_account", "project_id": "bench", "private_key_id": "bench", "client_email": "bench@example.com",
            "private_key": try String(contentsOfFile: keyPath, encoding: .utf8), "token_uri": "http://127.0.0.1:\(fcmPort)/token",
        ]
        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent("bench-fcm-\(run).json").path
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: credentials))

        // The push process.
        let pushPort = fcmPort + 1
        let process = try await bench.start(
            .push, port: pushPort,
            environment: [
                "PUSH_FCM_URL": "http://127.0.0.1:\(fcmPort)", "PUSH_FCM_CREDENTIALS_FILE": credentials, "PUSH_CONCURRENCY": "\(concurrency)",
                "KAFKA_FETCH_WAIT_MS": "5",
            ])
        defer {
            process.terminate()
            process.waitUntilExit()
        }

        // The read models: a workspace, a channel with the recipients and the sender, their tokens.
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: bench.cluster.bootstrapServers, clientId: "bench")),
            logger: logger)
        let producing = Task { try await producer.run() }
        defer { producing.cancel() }
        let workspace = WorkspaceID(UUID())
        let channel = ChannelID(UUID())
        let sender = UserID(UUID())
        let users = (0..<recipients).map { _ in UserID(UUID()) }
        var setup: [KafkaProducerMessage] = [
            try Self.record(
                WorkspaceEvents.WorkspaceCreated(
                    workspaceId: workspace, name: "bench", description: nil, coverImage: nil, ownerId: sender, defaultChannelId: channel, createdAt: Date()))
        ]
        for user in [sender] + users {
            setup.append(try Self.record(WorkspaceEvents.MemberJoined(workspaceId: workspace, userId: user, channelIds: [channel], via: .invitation)))
        }
        for (index, user) in users.enumerated() {
            setup.append(try Self.record(AuthEvents.DeviceTokenAdded(userId: user, token: "bench-\(run)-\(index)", addedAt: Date())))
        }
        let setupStart = ContinuousClock.now
        for result in await producer.sendAllAndAwait(setup) { _ = try result.get() }
        let recipients = self.recipients
        try await bench.withDatabase { c in
            while true {
                var counts: [Int64] = []
                for try await n in try await c.query(
                    "SELECT (SELECT count(*) FROM channel_members) + (SELECT count(*) FROM device_tokens)"
                ).decode(Int64.self) { counts.append(n) }
                if counts.first == Int64(2 * recipients + 1) { break }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        print("setup: \(recipients) members and tokens projected in \(ContinuousClock.now - setupStart)")

        // The messages, one after another: each fans out to every recipient.
        for round in 1...messages {
            let message = MessageID(UUIDv7.generate())
            let createdAt = Date()
            fake.expect(message.description, createdAt: createdAt)
            let event = ChatEvents.ChannelMessageCreated(
                messageId: message, workspaceId: workspace, channelId: channel, channelName: "일반",
                sender: .init(userId: sender, email: "bench@example.com", nickname: "벤치", profileImage: nil), content: "벤치마크 \(round)", files: [],
                createdAt: createdAt)
            _ = try await producer.sendAndAwait(try Self.record(event))
            let deadline = ContinuousClock.now + .seconds(600)
            while fake.count(message.description) < recipients, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            let figures = fake.figures(message.description)
            print(
                String(
                    format: "message %d: %d notifications in %.2f s = %.0f/s; commit → provider p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, last %.0f ms",
                    round, figures.count, figures.span, Double(figures.count) / max(figures.span, 0.001), figures.p50 * 1000, figures.p95 * 1000,
                    figures.p99 * 1000, figures.last * 1000))
        }
        try? FileManager.default.removeItem(atPath: keyPath)
        try? FileManager.default.removeItem(atPath: credentials)
    }

    static func record<P: EventPayload>(_ payload: P) throws -> KafkaProducerMessage {
        KafkaProducerMessage(
            topic: P.topic.name, key: payload.subject, value: try EventCoding.encode(CloudEvent(source: "bench", data: payload)),
            headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: P.eventType)])
    }
}

/// What the benchmark's fake FCM received: arrival times per message (`data.chat_id`).
final class BenchFCM: Sendable {
    private struct State {
        var createdAt: [String: Date] = [:]
        var arrivals: [String: [Date]] = [:]
    }
    private let state = Locked(State())

    func expect(_ message: String, createdAt: Date) { state.withLock { $0.createdAt[message] = createdAt } }

    func received(_ body: Data) {
        let now = Date()
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let message = object["message"] as? [String: Any],
            let data = message["data"] as? [String: String], let chat = data["chat_id"]
        else { return }
        state.withLock { $0.arrivals[chat, default: []].append(now) }
    }

    func count(_ message: String) -> Int { state.withLock { $0.arrivals[message]?.count ?? 0 } }

    /// Notifications received, seconds from the first to the last, and latency percentiles (s).
    func figures(_ message: String) -> (count: Int, span: Double, p50: Double, p95: Double, p99: Double, last: Double) {
        state.withLock { s in
            let arrivals = (s.arrivals[message] ?? []).sorted()
            guard let created = s.createdAt[message], let first = arrivals.first, let last = arrivals.last else { return (0, 0, 0, 0, 0, 0) }
            let latencies = arrivals.map { $0.timeIntervalSince(created) }
            func p(_ q: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * q))] }
            return (arrivals.count, last.timeIntervalSince(first), p(0.5), p(0.95), p(0.99), last.timeIntervalSince(created))
        }
    }
}
