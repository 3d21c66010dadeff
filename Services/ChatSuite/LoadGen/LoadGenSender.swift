import Common
import Events
import Foundation
import Kafka
import Logging
import NIOHTTP1

/// Where the load generator's messages go in: chat's REST API through the gateway (the whole
/// path), or straight onto `chat.message.v1` (fan-out and gateway only).
protocol MessageSink: Sendable {
    /// How messages go in, for the report: rest, kafka, http-publish.
    var name: String { get }
    /// Sends `content` to channel `channel` as user `sender`; returns a failure reason or nil.
    func send(channel: Int, sender: Int, content: String) async -> String?
}

/// `POST /v1/workspaces/{w}/channels/{c}/chats {content}` as the sender, on the lean client's
/// keep-alive connections.
struct RESTSink: MessageSink {
    var name: String { "rest" }
    let client: GatewayClient
    let lean: LeanHTTPClient
    let world: LoadGenWorld

    init(client: GatewayClient, world: LoadGenWorld) throws {
        self.client = client
        self.lean = try LeanHTTPClient(base: client.base)
        self.world = world
    }

    func send(channel: Int, sender: Int, content: String) async -> String? {
        let c = world.channels[channel]
        do {
            let response = try await lean.send(
                "POST", "/v1/workspaces/\(c.workspaceId)/channels/\(c.id)/chats",
                headers: [("SesacKey", client.sesacKey), ("Authorization", world.users[sender].token), ("Content-Type", "application/json")],
                body: #"{"content":"\#(content)"}"#)
            if response.status == 200 { return nil }
            return "HTTP \(response.status) \(client.json(response.body)?["errorCode"] as? String ?? "")"
        } catch {
            return "\(error)"
        }
    }
}

/// Produces `chat.channel-message.created` CloudEvents to `chat.message.v1`, keyed by channel id,
/// with the headers chat's outbox relay sets — what chat would publish after a successful POST,
/// without chat's database in the path. Messages are not stored: history and unread counts do
/// not see them.
struct KafkaSink: MessageSink {
    var name: String { "kafka" }
    let producer: KafkaProducer
    let world: LoadGenWorld

    func send(channel: Int, sender: Int, content: String) async -> String? {
        let payload = world.message(channel: channel, sender: sender, content: content)
        let event = CloudEvent(source: "loadgen", data: payload)
        do {
            let message = KafkaProducerMessage(
                topic: Topic.chatMessage.name, key: payload.subject, value: try EventCoding.encode(event),
                headers: [
                    KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased),
                    KafkaHeader(key: CloudEventKafkaHeader.type, string: event.type),
                    KafkaHeader(key: CloudEventKafkaHeader.contentType, string: CloudEventKafkaHeader.contentTypeValue),
                ]
            )
            _ = try await producer.sendAndAwait(message)
            return nil
        } catch {
            return "kafka: \(error)"
        }
    }
}

/// An open-loop, fixed-rate schedule: message `n` is due at `start + n / rate`, whatever happened
/// to earlier ones. `workers` tasks take the next number, wait for its slot and send it; a worker
/// that reaches a slot more than `lateTolerance` after it sends at once and counts the miss (the
/// workers were all busy: the system under test answered too slowly for the rate).
struct OpenLoopSchedule: Sendable {
    let rate: Int
    let messages: Int
    let workers: Int
    static let lateTolerance = 5.0  // ms

    func run(plan: LoadGenPlan, sink: any MessageSink, log: SendLog) async {
        let next = Locked(0)
        let intervalNanos = 1_000_000_000.0 / Double(rate)
        let start = monotonicNanos() + 50_000_000
        let runId = plan.runId
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    while true {
                        let n = next.withLock { v -> Int in
                            defer { v += 1 }; return v
                        }
                        guard n < messages else { return }
                        let slot = start + UInt64(Double(n) * intervalNanos)
                        let now = monotonicNanos()
                        if now < slot { try? await Task.sleep(for: .nanoseconds(Int64(slot - now))) }
                        let issued = monotonicNanos()
                        let lagMs = issued > slot ? Double(issued - slot) / 1e6 : 0
                        log.issued(n, at: issued, lagMs: lagMs, late: lagMs > Self.lateTolerance)
                        let channel = n % plan.channels
                        let sender = plan.member((n / plan.channels) % plan.members, of: channel)
                        let failure = await sink.send(channel: channel, sender: sender, content: DeliveryMarkers.content(runId: runId, message: n))
                        log.finished(n, failure: failure)
                    }
                }
            }
        }
    }
}

extension LoadGenWorld {
    /// A new message of `sender` in `channel`, as chat announces it (`chat.channel-message.created`).
    func message(channel: Int, sender: Int, content: String) -> ChatEvents.ChannelMessageCreated {
        let c = channels[channel]
        let user = users[sender]
        return ChatEvents.ChannelMessageCreated(
            messageId: .generate(), workspaceId: c.workspaceId, channelId: c.id, channelName: c.name,
            sender: .init(userId: user.id, email: user.email, nickname: user.nickname, profileImage: nil),
            content: content, files: [], createdAt: Date()
        )
    }
}
