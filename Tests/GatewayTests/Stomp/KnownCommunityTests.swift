import Events
import Foundation
import Testing

@testable import GatewayApp

@Suite("STOMP community signals without chat's check")
struct KnownCommunityTests {
    private static func session() throws -> StompSession {
        let user = try #require(UserID(UUID().uuidString.lowercased()))
        return StompSession(
            id: "s-1", userId: user, connection: LiveConnection(maxQueuedFrames: 64, maxQueuedBytes: 1 << 20),
            schedule: .init(serverSendEvery: nil, clientExpectedEvery: nil), fileBase: "", firstBeatAdvance: .zero)
    }

    private static func subscription(_ id: String, _ topic: StompTopic, follows follow: LiveFollow) -> StompSession.Subscription {
        StompSession.Subscription(id: id, destination: "/topic/x", topic: topic, ack: .auto, follow: follow)
    }

    @Test(
        "a community subscription names its workspace by the id or alias it was made with; a room's or a conversation's does not; none once unsubscribed or revoked"
    )
    func knownCommunity() throws {
        let session = try Self.session()
        let workspace = UUID()
        let aliased = UUID()
        let roomWorkspace = UUID()
        let channel = UUID()
        #expect(session.knownCommunity(workspace.lowercased) == nil)

        let byId = LiveFollow(id: workspace, kind: .workspace, workspaceId: workspace, userId: session.userId)
        let byAlias = LiveFollow(id: aliased, kind: .workspace, workspaceId: aliased, userId: session.userId)
        _ = session.subscribe(Self.subscription("c", .community(workspace.lowercased), follows: byId))
        _ = session.subscribe(Self.subscription("a", .community("42"), follows: byAlias))
        // `/topic/{roomId}` follows its room's workspace (presence), and a channel its conversation:
        // neither was a community membership check.
        _ = session.subscribe(
            Self.subscription("r", .room("7"), follows: LiveFollow(id: roomWorkspace, kind: .workspace, workspaceId: roomWorkspace, userId: nil)))
        let conversation = LiveFollow(id: channel, kind: .channel, workspaceId: workspace, userId: nil)
        _ = session.subscribe(Self.subscription("g", .group(channel.lowercased), follows: conversation))

        #expect(session.knownCommunity(workspace.lowercased) == workspace)
        #expect(session.knownCommunity(workspace.uuidString) == workspace)  // upper case: the same id
        #expect(session.knownCommunity("42") == aliased)
        #expect(session.knownCommunity(aliased.lowercased) == aliased)
        #expect(session.knownCommunity("43") == nil)
        #expect(session.knownCommunity(roomWorkspace.lowercased) == nil)
        #expect(session.knownCommunity(channel.lowercased) == nil)
        #expect(session.knownCommunity("") == nil)

        // Unsubscribed, or revoked (the membership ended): chat is asked again.
        #expect(session.unsubscribe("a").removed)
        #expect(session.knownCommunity("42") == nil)
        session.revoked(byId)
        #expect(session.knownCommunity(workspace.lowercased) == nil)
        #expect(session.subscriptionCount == 2)
    }
}
