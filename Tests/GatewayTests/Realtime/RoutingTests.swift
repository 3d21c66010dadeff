import AccessTokens
import AsyncHTTPClient
import Events
import Foundation
import NIOCore
import Synchronization
import Testing
import TestSupport

@testable import GatewayApp

/// Who an event reaches is decided when it comes, and a delivery renders once per protocol
/// and target (docs/benchmarks.md, part 41 tried caching both further; these pin what any such
/// cache must keep).
@Suite("Routes and renderings")
struct RoutingTests {
    /// Notes the channel messages it is given.
    final class Recorder: LiveSubscriber {
        let seen = Mutex<[UUID]>([])

        func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
            guard case .channelMessage(let message) = delivery.event else { return }
            seen.withLock { $0.append(message.messageId.uuid) }
        }

        func revoked(_ follow: LiveFollow) {}

        var presenceUpdates: PresenceUpdates { .none }
        var messages: [UUID] { seen.withLock { $0 } }
    }

    static func hub() async throws -> RealtimeHub {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(try JWTKeyPEM.newEd25519().publicKey), audience: "test", issuer: "test")
        return RealtimeHub(
            settings: RealtimeSettings(gatewayId: "gw-routes"),
            events: GatewayEventPublisher(producer: producer, gatewayId: "gw-routes", logger: TestKafka.logger),
            interest: GatewayInterest(announce: { _, _ in }),
            access: ConversationAccess(client: HTTPClient.shared, chatURL: "http://127.0.0.1:1", logger: TestKafka.logger), verifier: verifier,
            admission: RealtimeAdmission(handshakesPerSecond: 100, handshakeBurst: 100, joinsPerSecond: 100, joinBurst: 100, maxNamespacesPerSession: 10)
        )
    }

    /// A channel message in `channel`; its id.
    static func send(_ hub: RealtimeHub, in channel: ChannelID) -> UUID {
        let sender = ChatEvents.Sender(userId: .generate(), email: "a@example.com", nickname: "a", profileImage: nil)
        let message = ChatEvents.ChannelMessageCreated(
            messageId: .generate(), workspaceId: .generate(), channelId: channel, channelName: "general", sender: sender, content: "hi",
            files: [], createdAt: Date())
        hub.deliver(.channelMessage(message), id: UUID())
        return message.messageId.uuid
    }

    @Test("each event reaches who follows when it comes: a follow, an unfollow, a session's end and a revocation after an event all change who gets the next")
    func followersChangeBetweenEvents() async throws {
        let hub = try await Self.hub()
        let channel = ChannelID.generate()
        let (userA, userC) = (UserID(UUID()), UserID(UUID()))
        let (a, b, c) = (Recorder(), Recorder(), Recorder())
        func follow(_ user: UserID?) -> LiveFollow { LiveFollow(id: channel.uuid, kind: .channel, workspaceId: nil, userId: user) }

        hub.follow(a, follow(userA))
        let first = Self.send(hub, in: channel)
        hub.follow(b, follow(nil))
        hub.follow(c, follow(userC))
        let second = Self.send(hub, in: channel)
        hub.unfollow(a, channel.uuid)
        let third = Self.send(hub, in: channel)
        hub.unfollowAll(b)
        let fourth = Self.send(hub, in: channel)
        hub.revoke(user: userC, conversations: [channel.uuid], roomsIn: nil)
        _ = Self.send(hub, in: channel)
        hub.follow(a, follow(userA))
        let sixth = Self.send(hub, in: channel)

        #expect(a.messages == [first, second, sixth])
        #expect(b.messages == [second, third])
        #expect(c.messages == [second, third, fourth])
    }

    @Test("a delivery makes each rendering once, whatever order its recipients' keys come in, and every recipient of a key gets the same bytes")
    func renderingsMadeOnce() async throws {
        let sender = ChatEvents.Sender(userId: .generate(), email: "a@example.com", nickname: "a", profileImage: nil)
        let message = ChatEvents.ChannelMessageCreated(
            messageId: .generate(), workspaceId: .generate(), channelId: .generate(), channelName: "general", sender: sender, content: "hi",
            files: [], createdAt: Date())
        let delivery = LiveDelivery(.channelMessage(message))
        let made = Atomic<Int>(0)
        let (first, second, third) = (UUID(), UUID(), UUID())
        @Sendable func key(_ target: UUID) -> LiveDelivery.RenderingKey { .init(format: .socketIO, target: target) }
        /// Each making is distinct, so a recipient given a second making would show.
        @Sendable func render(_ target: UUID) -> OutboundText {
            delivery.rendering(key(target)) { _ in OutboundText("\(target) #\(made.wrappingAdd(1, ordering: .relaxed).newValue)") }
        }

        let texts = [first, second, first, third, second, first, third].map { render($0).text }
        #expect(made.load(ordering: .relaxed) == 3)
        #expect(texts == ["\(first) #1", "\(second) #2", "\(first) #1", "\(third) #3", "\(second) #2", "\(first) #1", "\(third) #3"])
        #expect(delivery.rendering(key(second)) { _ in OutboundText("again") }.text == "\(second) #2")

        // Recipients on many threads at once: a key may be made twice in a race, but every
        // recipient of it gets the one that was kept.
        let racing = LiveDelivery(.channelMessage(message))
        let targets = (0..<8).map { _ in UUID() }
        let seen = try await withThrowingTaskGroup(of: (UUID, String).self) { group in
            for round in 0..<400 {
                let target = targets[round % targets.count]
                group.addTask {
                    (target, racing.rendering(key(target)) { _ in OutboundText("\(target) \(UUID())") }.text)
                }
            }
            var seen: [UUID: Set<String>] = [:]
            for try await (target, text) in group { seen[target, default: []].insert(text) }
            return seen
        }
        #expect(seen.count == targets.count)
        #expect(seen.values.allSatisfy { $0.count == 1 }, "a key rendered differently for two recipients: \(seen)")
    }
}
