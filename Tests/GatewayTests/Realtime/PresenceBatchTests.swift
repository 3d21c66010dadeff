import AccessTokens
import AsyncHTTPClient
import Events
import Foundation
import NIOCore
import NIOEmbedded
import NIOWebSocket
import ServiceKit
import Synchronization
import Testing
import TestSupport

@testable import GatewayApp

/// Presence goes to native sessions in per-workspace batches (docs/native-gateway.md,
/// `presence.batch`): a burst of n members coming online costs each session a few frames, not n.
/// STOMP still takes each change as it comes, Socket.IO none.
@Suite("Presence batches")
struct PresenceBatchTests {
    static func change(_ user: UserID, _ status: PresenceEvents.Status, in workspaces: [UUID]) -> PresenceEvents.StatusChanged {
        PresenceEvents.StatusChanged(userId: user, status: status, lastSeen: Date(), workspaceIds: workspaces.map { WorkspaceID($0) })
    }

    @Test("a window's changes gather per workspace, in arrival order; a user's later change replaces the earlier; batches split at 500")
    func gathers() {
        let batcher = PresenceBatcher()
        let (w1, w2) = (UUID(), UUID())
        let (a, b) = (UserID(UUID()), UserID(UUID()))
        #expect(batcher.take().isEmpty)
        batcher.add(Self.change(a, .online, in: [w1, w2]))
        batcher.add(Self.change(b, .online, in: [w2]))
        batcher.add(Self.change(a, .offline, in: [w1, w2]))
        batcher.add(Self.change(UserID(UUID()), .online, in: []))  // no workspace: nobody to tell
        let batches = batcher.take()
        #expect(batches.map(\.workspaceId) == [w1, w2])
        #expect(batches[0].changes.map(\.userId) == [a] && batches[0].changes.map(\.status) == [.offline])
        #expect(batches[1].changes.map(\.userId) == [a, b] && batches[1].changes.map(\.status) == [.offline, .online])
        #expect(batcher.take().isEmpty, "taken once")

        let users = (0..<1_201).map { _ in UserID(UUID()) }
        for user in users { batcher.add(Self.change(user, .online, in: [w1])) }
        let split = batcher.take()
        #expect(split.map(\.changes.count) == [500, 500, 201])
        #expect(split.flatMap(\.changes).map(\.userId) == users)
    }

    @Test("gateway.realtime.presence-batch-ms: 250 ms unless set; outside 1…10000, or not a number, the gateway does not start")
    func window() throws {
        func settings(_ value: String?) throws -> RealtimeSettings {
            let environment = value.map { ["GATEWAY_REALTIME_PRESENCE_BATCH_MS": $0] } ?? [:]
            return try RealtimeSettings(
                ServiceSettings(serviceName: GatewayService.name, defaults: GatewayService.defaults, environment: environment, arguments: ["gateway"]))
        }
        #expect(try settings(nil).presenceBatchWindow == .milliseconds(250))
        #expect(try settings("40").presenceBatchWindow == .milliseconds(40))
        for bad in ["0", "-5", "10001", "soon"] {
            #expect(throws: (any Error).self, "\(bad)") { try settings(bad) }
        }
    }

    @Test("the flush loop wakes once for what gathers, and again for what comes after a flush")
    func wakes() async throws {
        let batcher = PresenceBatcher()
        var wakes = batcher.wakes.makeAsyncIterator()
        let w = UUID()
        batcher.add(Self.change(UserID(UUID()), .online, in: [w]))
        batcher.add(Self.change(UserID(UUID()), .online, in: [w]))
        #expect(await wakes.next() != nil)
        #expect(batcher.take().first?.changes.count == 2)
        batcher.add(Self.change(UserID(UUID()), .online, in: [w]))
        #expect(await wakes.next() != nil)
        #expect(batcher.take().first?.changes.count == 1)
        batcher.finish()
        #expect(await wakes.next() == nil, "one wake per window: none was left over")
    }

    /// Notes what reaches it.
    final class Probe: LiveSubscriber {
        let presenceUpdates: PresenceUpdates
        let seen = Mutex<[LiveEvent]>([])

        init(_ updates: PresenceUpdates) {
            presenceUpdates = updates
        }

        func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
            seen.withLock { $0.append(delivery.event) }
        }

        func revoked(_ follow: LiveFollow) {}

        var changes: [(UserID, PresenceEvents.Status)] {
            seen.withLock { events in
                events.flatMap { event -> [(UserID, PresenceEvents.Status)] in
                    switch event {
                    case .presence(let change): [(change.userId, change.status)]
                    case .presenceBatch(let batch): batch.changes.map { ($0.userId, $0.status) }
                    default: []
                    }
                }
            }
        }

        var batches: Int { seen.withLock { $0.filter { if case .presenceBatch = $0 { true } else { false } }.count } }
        var singles: Int { seen.withLock { $0.filter { if case .presence = $0 { true } else { false } }.count } }
    }

    @Test("STOMP-like subscribers get each change at once, native-like ones a batch at the flush, Socket.IO-like ones nothing; nobody hears of their own user")
    func routing() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(try JWTKeyPEM.newEd25519().publicKey), audience: "test", issuer: "test")
        let hub = RealtimeHub(
            settings: RealtimeSettings(gatewayId: "gw-presence"),
            events: GatewayEventPublisher(producer: producer, gatewayId: "gw-presence", logger: TestKafka.logger),
            interest: GatewayInterest(announce: { _, _ in }),
            access: ConversationAccess(client: HTTPClient.shared, chatURL: "http://127.0.0.1:1", logger: TestKafka.logger), verifier: verifier,
            admission: RealtimeAdmission(handshakesPerSecond: 100, handshakeBurst: 100, joinsPerSecond: 100, joinBurst: 100, maxNamespacesPerSession: 10)
        )
        let (workspace, elsewhere) = (UUID(), UUID())
        let (a, b, c) = (UserID(UUID()), UserID(UUID()), UserID(UUID()))
        let (nativeA, nativeB, stompA, socketIO, outsider) = (Probe(.batched), Probe(.batched), Probe(.each), Probe(.none), Probe(.batched))
        hub.follow(nativeA, LiveFollow(id: workspace, kind: .workspace, workspaceId: workspace, userId: a))
        hub.follow(nativeB, LiveFollow(id: UUID(), kind: .channel, workspaceId: workspace, userId: b))
        hub.follow(stompA, LiveFollow(id: workspace, kind: .workspace, workspaceId: workspace, userId: a))
        hub.follow(socketIO, LiveFollow(id: UUID(), kind: .channel, workspaceId: workspace, userId: c))
        hub.follow(outsider, LiveFollow(id: elsewhere, kind: .workspace, workspaceId: elsewhere, userId: c))

        hub.deliver(.presence(Self.change(b, .online, in: [workspace])), id: UUID())
        hub.deliver(.presence(Self.change(c, .online, in: [workspace])), id: UUID())
        let redelivered = UUID()
        hub.deliver(.presence(Self.change(c, .offline, in: [workspace])), id: redelivered)
        hub.deliver(.presence(Self.change(c, .online, in: [workspace])), id: redelivered)  // a redelivery: dropped
        #expect(stompA.singles == 3)
        #expect(nativeA.seen.withLock { $0.isEmpty } && nativeB.seen.withLock { $0.isEmpty }, "batched: nothing before the flush")

        hub.flushPresence()
        #expect(nativeA.batches == 1)
        #expect(nativeA.changes.map(\.0) == [b, c] && nativeA.changes.map(\.1) == [.online, .offline])
        // b's session gets the batch; it drops b's own change when it writes the dispatch (below).
        #expect(nativeB.batches == 1)
        #expect(socketIO.seen.withLock { $0.isEmpty })
        #expect(outsider.seen.withLock { $0.isEmpty })

        // A window with a's change alone: not for a's sessions, on either protocol.
        hub.deliver(.presence(Self.change(a, .offline, in: [workspace])), id: UUID())
        hub.flushPresence()
        #expect(nativeA.batches == 1 && stompA.singles == 3)
        #expect(nativeB.batches == 2 && nativeB.changes.last.map { $0.0 == a && $0.1 == .offline } == true)
        hub.flushPresence()
        #expect(nativeB.batches == 2, "nothing pending, nothing sent")
    }

    @Test("a native session writes one presence.batch dispatch per batch, without its own user's change")
    func nativeDispatch() throws {
        let me = UserID(UUID())
        let other = UserID(UUID())
        let workspace = UUID()
        let session = NativeSession(id: "s1", userId: me, openedAt: Date(), maxMarks: 100)
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        let connection = LiveConnection(maxQueuedFrames: 100, maxQueuedBytes: 1 << 20)
        #expect(session.attachReady(connection, json: "{}"))
        let follow = LiveFollow(id: workspace, kind: .workspace, workspaceId: workspace, userId: me)
        let mixed = PresenceBatch(workspaceId: workspace, changes: [Self.change(other, .online, in: [workspace]), Self.change(me, .online, in: [workspace])])
        session.deliver(LiveDelivery(.presenceBatch(mixed)), for: follow)
        let othersOnly = PresenceBatch(workspaceId: workspace, changes: [Self.change(other, .offline, in: [workspace])])
        session.deliver(LiveDelivery(.presenceBatch(othersOnly)), for: follow)
        connection.attach(ChannelWriter(channel: channel, batcher: EventLoopWriteBatcher(eventLoop: loop)) { _, _ in })
        loop.run()

        var wire = ByteBuffer()
        while var bytes = try channel.readOutbound(as: ByteBuffer.self) { wire.writeBuffer(&bytes) }
        let frames = try ServerFrames.parse(&wire).map {
            try JSONSerialization.jsonObject(with: Data(String(buffer: $0.payload).utf8)) as? [String: Any] ?? [:]
        }
        try #require(frames.count == 3, "ready and two batches: \(frames)")
        #expect(frames[1...].map { $0["t"] as? String } == ["presence.batch", "presence.batch"])
        #expect(frames[1...].map { $0["s"] as? Int } == [2, 3])
        let payloads = frames[1...].map { $0["d"] as? [String: Any] ?? [:] }
        #expect(payloads.allSatisfy { $0["workspace_id"] as? String == workspace.uuidString.lowercased() })
        let updates = payloads.map { ($0["updates"] as? [[String: Any]] ?? []) }
        #expect(updates.map { $0.map { $0["user_id"] as? String } } == [[other.description], [other.description]])
        #expect(updates.map { $0.map { $0["status"] as? String } } == [["online"], ["offline"]])
        #expect(updates.flatMap { $0 }.allSatisfy { Set($0.keys) == ["user_id", "status", "lastSeen"] })
        _ = try channel.finish()
    }
}
