import Events
import Foundation
import NIOCore
import Testing

@testable import GatewayApp

@Suite("STOMP MESSAGE frames")
struct MessageFrameTests {
    @Test("a MESSAGE is the subscription's head, its id (and ack with client acks), its length, the body and the NUL, small or large")
    func messageFrame() throws {
        let connection = LiveConnection(maxQueuedFrames: 8, maxQueuedBytes: 1 << 20)
        let user = try #require(UserID(UUID().uuidString.lowercased()))
        let session = StompSession(
            id: "s-42", userId: user, connection: connection, schedule: .init(serverSendEvery: nil, clientExpectedEvery: nil),
            fileBase: "", firstBeatAdvance: .zero)
        for ack in [StompSession.AckMode.auto, .client, .clientIndividual] {
            let subscription = StompSession.Subscription(
                id: "sub:0", destination: "/topic/group/7", topic: .group("7"), ack: ack,
                follow: LiveFollow(id: UUID(), kind: .channel, workspaceId: nil, userId: nil))
            for (number, bodyBytes) in [(1, 0), (9, 20), (10, 120), (12_345, 8_000), (7, OutboundText.sharingThreshold), (8, 70_000)] {
                let body = String(repeating: "가", count: bodyBytes / 3) + String(repeating: "x", count: bodyBytes % 3)
                let frame = session.message(subscription, body: ByteBuffer(string: body), number: number)
                let ackLine = ack == .auto ? "" : "ack:s-42-\(number)\n"
                let expected = subscription.head + "message-id:s-42-\(number)\n" + ackLine + "content-length:\(body.utf8.count)\n\n" + body + "\0"
                #expect(frame.text == expected, "\(ack) \(number) \(bodyBytes)")
                #expect(frame.byteCount == expected.utf8.count)
                var wire = frame.frameHead
                if var shared = frame.shared, var tail = frame.tail {
                    wire.writeBuffer(&shared)
                    wire.writeBuffer(&tail)
                }
                let frames = try ServerFrames.parse(&wire)
                #expect(frames.count == 1 && frames.first.map { String(buffer: $0.payload) } == expected)
            }
        }
    }
}
