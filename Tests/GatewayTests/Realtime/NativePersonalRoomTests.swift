import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing
import TestSupport

/// Personal rooms (`/v1/rooms`, outside any workspace) on the native protocol: listed in `ready`,
/// followed live, replayed on resume, and removed when the member is removed.
@Suite("Native gateway: personal rooms", .serialized)
struct NativePersonalRoomTests {
    @Test(
        "ready lists personal rooms with unread counts; their messages arrive live as dm.message; a resume replays them; a removed member gets conversation.removed"
    )
    func personalRooms() async throws {
        let gatewayId = "gw-rooms-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: NativeProtocolTests.environment(gatewayId)) { s in
            let (a, b, c) = (try await s.smoothUser(name: "하나"), try await s.smoothUser(name: "두울"), try await s.smoothUser(name: "세엣"))
            try await s.befriend(a, b)
            try await s.befriend(a, c)
            let (ua, ub, uc) = (try await s.v1User(a), try await s.v1User(b), try await s.v1User(c))
            let group = try #require(jsonObject(try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["\#(ub.id)","\#(uc.id)"],"name":"셋이서"}"#)))
            let roomId = id(group, "room_id")
            let pairRoom: [String: Any] = try #require(jsonObject(try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["\#(ub.id)"]}"#)))
            let pair = id(pairRoom, "room_id")
            let chats = "/v1/rooms/\(roomId)/chats"
            #expect(try await s.send(.post, chats, ub, json: #"{"content":"먼저 온 글"}"#).status == .ok)
            let replica = try await RealFanoutTests.startReplica(s, "fanout-rooms")
            let port = try #require(s.client.port)

            let (alice, ready) = try await NativeTestClient.connect(port, ua)
            let rooms = try #require(ready["rooms"] as? [[String: Any]])
            let listed = try #require(rooms.first { $0["room_id"] as? String == roomId })
            // Absent values are omitted, as everywhere in /v1: a group has no other member, a friends' room no name.
            #expect(Set(listed.keys) == ["room_id", "group", "name", "unread_count"])
            #expect(listed["group"] as? Bool == true && listed["name"] as? String == "셋이서")
            #expect(listed["unread_count"] as? Int == 1)
            let friends = try #require(rooms.first { $0["room_id"] as? String == pair })
            #expect(Set(friends.keys) == ["room_id", "group", "user_id", "unread_count"])
            #expect(friends["group"] as? Bool == false && friends["user_id"] as? String == ub.id)
            #expect(friends["unread_count"] as? Int == 0)
            let (carol, carolReady) = try await NativeTestClient.connect(port, uc)
            #expect((carolReady["rooms"] as? [[String: Any]])?.compactMap { $0["room_id"] as? String } == [roomId])

            // Live: once the fan-out knows the gateway follows the room, every member's session gets its messages.
            var probes: [String] = []
            try await eventually("the room's messages reach both sessions", timeout: .seconds(60)) {
                probes.append(id(jsonObject(try await s.send(.post, chats, ub, json: #"{"content":"probe \#(probes.count)"}"#)), "dm_id"))
                try await Task.sleep(for: .milliseconds(200))
                return [alice, carol].allSatisfy { client in client.dispatches("dm.message").contains { probes.contains($0.data["dm_id"] as? String ?? "") } }
            }
            let live = try #require(alice.dispatches("dm.message").last?.data)
            #expect(live["room_id"] as? String == roomId && (live["content"] as? String)?.hasPrefix("probe") == true)

            // Resume: what was posted while the socket was down is replayed in order.
            // A probe still in flight to Alice would count as missed: let the last ones land first.
            try await Task.sleep(for: .milliseconds(500))
            let session = try #require(ready["session_id"] as? String)
            let seq = alice.lastSeq
            await alice.kill()
            var missed: [String] = []
            for i in 0..<3 {
                missed.append(id(jsonObject(try await s.send(.post, chats, ub, json: #"{"content":"놓친 글 \#(i)"}"#)), "dm_id"))
            }
            let resumed = NativeTestClient(port: port)
            _ = try await resumed.waitForOp("hello")
            resumed.resume(ua.token, session: session, seq: seq)
            let done = try await resumed.waitForOp("resumed")
            #expect(done["replayed"] as? Int == 3)
            #expect(resumed.dispatches("dm.message").compactMap { $0.data["dm_id"] as? String } == missed)

            // Removed from the group: Carol's session stops following it.
            #expect(try await s.send(.delete, "/v1/rooms/\(roomId)/members/\(uc.id)", ua, json: "{}").status == .ok)
            try await carol.waitFor("conversation.removed") { _ in
                carol.dispatches("conversation.removed").contains { $0.data["conversation_id"] as? String == roomId }
            }
            let after = id(jsonObject(try await s.send(.post, chats, ub, json: #"{"content":"둘만 보는 글"}"#)), "dm_id")
            try await resumed.waitFor("the message after the removal") { _ in
                resumed.dispatches("dm.message").contains { $0.data["dm_id"] as? String == after }
            }
            #expect(!carol.dispatches("dm.message").contains { $0.data["dm_id"] as? String == after })

            await resumed.kill()
            await carol.kill()
            try await replica.stop()
        }
    }
}
