import Events
import Foundation
import Kafka
import TestSupport

/// Known events on the embedded broker, for the export tests and the analytics example.
enum ExportFixtures {
    /// The start of the UTC hour `hoursAgo` hours before now.
    static func hourStart(hoursAgo: Int) -> Date {
        let now = Date().timeIntervalSince1970
        return Date(timeIntervalSince1970: (now / 3600).rounded(.down) * 3600 - Double(hoursAgo) * 3600)
    }

    static func record<P: EventPayload>(_ payload: P, at time: Date, source: String = "test") throws -> KafkaProducerMessage {
        let event = CloudEvent(source: source, data: payload, time: time)
        return KafkaProducerMessage(
            topic: P.topic.name, key: event.subject, value: try EventCoding.encode(event),
            headers: [KafkaHeader(key: CloudEventKafkaHeader.type, value: Array(P.eventType.utf8))])
    }

    static func sender(_ user: UserID) -> ChatEvents.Sender {
        ChatEvents.Sender(userId: user, email: "user-\(user.description.suffix(4))@example.com", nickname: "닉네임", profileImage: nil)
    }

    static func channelMessage(workspace: WorkspaceID, channel: ChannelID, from user: UserID, text: String, at time: Date) throws -> KafkaProducerMessage {
        try record(
            ChatEvents.ChannelMessageCreated(
                messageId: MessageID.generate(), workspaceId: workspace, channelId: channel, channelName: "general", sender: sender(user), content: text,
                files: [], createdAt: time), at: time, source: "chat")
    }

    static func produce(_ records: [KafkaProducerMessage], to cluster: EmbeddedKafkaCluster) async throws {
        let producer = try TestKafka.producer(cluster)
        for result in await producer.sendAllAndAwait(records) { _ = try result.get() }
        try await producer.flush()
    }

    /// Every line of every `.ndjson` file under `directory`, by path relative to it.
    static func lines(under directory: URL) throws -> [String: [[String: Any]]] {
        var result: [String: [[String: Any]]] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return result }
        for case let path as String in walker where path.hasSuffix(".ndjson") {
            let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
            result[path] = try text.split(separator: "\n").map {
                guard let object = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else {
                    throw ExportTestError("not an object: \($0)")
                }
                return object
            }
        }
        return result
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-export-\(UUID().uuidString.prefix(8))")
    }
}

struct ExportTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
