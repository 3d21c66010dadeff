import ArgumentParser
import Events
import Foundation

/// `chatsuite bench decode`: decoding a delivery's CloudEvent (what every gateway and consumer
/// does once per event) with `EventJSONDecoder` against Foundation's `JSONDecoder` as
/// `EventCoding.decoder()` configures it, in one process, alternating rounds.
struct DecodeBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "decode", abstract: "Event decoding: EventJSONDecoder against JSONDecoder.")

    @Option(help: "Decodes per round and decoder.")
    var iterations: Int = 100_000

    @Option(help: "Rounds (each decoder once per round, alternating).")
    var rounds: Int = 3

    func run() throws {
        let sender = ChatEvents.Sender(
            userId: .generate(), email: "loadgen-0042@example.com", nickname: "loadgen 42", profileImage: "/static/profiles/a.jpg", alias: 42)
        let message = ChatEvents.ChannelMessageCreated(
            messageId: .generate(), workspaceId: .generate(), channelId: .generate(), channelName: "channel-17", sender: sender,
            content: "load test message 12345 from loadgen: 안녕하세요 \"quoted\"", files: [], createdAt: Date(), mentions: [])
        let presence = PresenceEvents.StatusChanged(
            userId: .generate(), status: .online, lastSeen: Date(), workspaceIds: [.generate(), .generate()])
        try measure(CloudEvent(source: "chat", data: message))
        try measure(CloudEvent(source: "presence", data: presence))
    }

    private func measure<P: EventPayload>(_ event: CloudEvent<P>) throws {
        let bytes = try EventCoding.encode(event)
        let foundation = EventCoding.decoder()
        let fast = EventJSONDecoder()
        guard try fast.decode(CloudEvent<P>.self, from: bytes) == event, try foundation.decode(CloudEvent<P>.self, from: Data(bytes)) == event else {
            throw ValidationError("a decoder does not give back the event")
        }
        print("\(P.eventType) (\(bytes.count) bytes), \(iterations) decodes per round:")
        for round in 1...rounds {
            let clock = ContinuousClock()
            let slow = try clock.measure {
                for _ in 0..<iterations { _ = try foundation.decode(CloudEvent<P>.self, from: Data(bytes)) }
            }
            let quick = try clock.measure {
                for _ in 0..<iterations { _ = try fast.decode(CloudEvent<P>.self, from: bytes) }
            }
            let perSlow = Double(slow.components.attoseconds / 1_000_000_000 + slow.components.seconds * 1_000_000_000) / Double(iterations) / 1000
            let perQuick = Double(quick.components.attoseconds / 1_000_000_000 + quick.components.seconds * 1_000_000_000) / Double(iterations) / 1000
            print(
                "  round \(round): JSONDecoder \(String(format: "%.2f", perSlow)) µs, EventJSONDecoder \(String(format: "%.2f", perQuick)) µs"
                    + " (\(String(format: "%.2f", perSlow / perQuick))× faster)")
        }
    }
}
