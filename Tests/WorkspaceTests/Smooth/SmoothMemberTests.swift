import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

/// Members, invitations, joining and leaving on `/community-server`.
@Suite("Smooth community members")
struct SmoothMemberTests {
    @Test("GET /community/{id}/member: exact keys, OWNER/NONE, online/offline from presence.v1, id 0 before auth sends one")
    func members() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user("주인")
            let member = try await f.user("손님")
            let pending = try await f.userWithoutAlias()
            let community = try await f.shared(owner, member, pending)

            // presence.v1 says the member is online (as the presence service would).
            let producer = try TestKafka.producer(f.s.cluster)
            let event = CloudEvent(
                source: "presence", data: PresenceEvents.StatusChanged(userId: UserID(member.uuid), status: .online, lastSeen: Date(), workspaceIds: []))
            _ = try await producer.sendAndAwait(
                KafkaProducerMessage(
                    topic: Topic.presence.name, key: member.uuid.uuidString.lowercased(), value: try EventCoding.encode(event),
                    headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: PresenceEvents.StatusChanged.eventType)]))
            var members: [[String: Any]] = []
            try await eventually("the member shows online", timeout: .seconds(30)) {
                let answer = try await f.smooth(.get, "/community/\(community)/member", owner)
                members = answer.result?["members"] as? [[String: Any]] ?? []
                return members.contains { $0["id"] as? Int == member.id && $0["status"] as? String == "online" }
            }
            #expect(members.count == 3)
            #expect(members.allSatisfy { Set($0.keys) == ["id", "profileImage", "communityName", "nickname", "code", "role", "status"] })
            #expect(members.map { $0["id"] as? Int } == [owner.id, member.id, 0])
            #expect(members.map { $0["role"] as? String } == ["OWNER", "NONE", "NONE"])
            #expect(members.map { $0["status"] as? String } == ["offline", "online", "offline"])
            #expect(members.map { $0["nickname"] as? String } == ["주인", "손님", "새싹이"])
            #expect(members.map { $0["communityName"] as? String } == ["주인", "손님", "새싹이"])
            #expect(members.map { $0["code"] as? String } == [owner.smooth.code, member.smooth.code, ""])
            #expect(members.allSatisfy { $0["profileImage"] is NSNull })

            #expect(try await f.smooth(.get, "/community/\(community)/member", try await f.user()).outcome == "400 4002")
            #expect(try await f.smooth(.get, "/community/424242/member", owner).outcome == "400 4002")
        }
    }

    @Test("POST /community/invitation → {url}, one link per member; GET /community/{id}/invitation lists them; DELETE /community/invitation is the owner's")
    func invitations() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user("주인")
            let member = try await f.user()
            let stranger = try await f.user()
            let community = try await f.shared(owner, member)

            let created = try await f.smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#)
            #expect(created.outcome == "200 1000")
            #expect(Set(created.result?.keys.map { $0 } ?? []) == ["url"])
            let url = try #require(created.result?["url"] as? String)
            #expect(url.hasPrefix("http") && url.contains("/invite/c/"))
            let code = String(try #require(url.split(separator: "/").last))
            #expect(code.count == 10)
            // Asking again gives the same link; another member gets their own.
            #expect(try await f.smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#).result?["url"] as? String == url)
            let theirs = try #require(try await f.smooth(.post, "/community/invitation", member, json: #"{"id":\#(community)}"#).result?["url"] as? String)
            #expect(theirs != url)
            #expect(try await f.smooth(.post, "/community/invitation", stranger, json: #"{"id":\#(community)}"#).outcome == "400 4002")
            #expect(try await f.smooth(.post, "/community/invitation", owner, json: #"{}"#).outcome == "400 4002")

            let listed = try await f.smooth(.get, "/community/\(community)/invitation", member)
            #expect(listed.outcome == "200 1000")
            let invitations = try #require(listed.result?["invitations"] as? [[String: Any]])
            #expect(invitations.count == 2)
            #expect(invitations.allSatisfy { Set($0.keys) == ["invitationId", "nickname", "userCode", "profileImage", "inviteCode"] })
            let mine = try #require(invitations.first { $0["inviteCode"] as? String == code })
            #expect(mine["nickname"] as? String == "주인" && mine["userCode"] as? String == owner.smooth.code)
            let invitationId = try #require(mine["invitationId"] as? Int)
            #expect(try await f.smooth(.get, "/community/\(community)/invitation", stranger).outcome == "400 4002")

            // Revoking is the owner's; a revoked link joins nobody.
            #expect(try await f.smooth(.delete, "/community/invitation?id=\(invitationId)", member).outcome == "400 1401")
            #expect(try await f.smooth(.delete, "/community/invitation?id=\(invitationId)", stranger).outcome == "400 4005")
            #expect(try await f.smooth(.delete, "/community/invitation?id=\(invitationId)", owner).outcome == "200 1000")
            #expect(try await f.smooth(.delete, "/community/invitation?id=\(invitationId)", owner).outcome == "400 4005")
            #expect(try await f.smooth(.delete, "/community/invitation?id=x", owner).outcome == "400 4005")
            #expect(try await f.smooth(.post, "/community/member", stranger, json: #"{"code":"\#(code)"}"#).outcome == "400 4005")
            #expect(try await f.smooth(.post, "/community/member", stranger, json: #"{"code":"\#(theirs)"}"#).outcome == "200 1000")
            let left = try #require(try await f.smooth(.get, "/community/\(community)/invitation", owner).result?["invitations"] as? [[String: Any]])
            #expect(left.map { $0["inviteCode"] as? String } == [String(theirs.split(separator: "/").last ?? "")])
            // A new link for the owner after the revocation.
            #expect(try await f.smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#).result?["url"] as? String != url)
        }
    }

    @Test("POST /community/member {code}: joins by link or bare code into every open channel; 4013 twice, 4005 for bad codes")
    func join() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let guest = try await f.user()
            let late = try await f.user()
            let stranger = try await f.user()
            let community = try await f.community(owner)
            let url = try #require(try await f.smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#).result?["url"] as? String)
            let code = String(try #require(url.split(separator: "/").last))
            let text = try await f.categoryId(community, owner, named: "채팅 채널")
            let secret = try await f.smooth(.post, "/channel", owner, json: #"{"id":\#(text),"name":"비밀","type":"TEXT","public":false}"#)
            let secretId = try #require(secret.result?["id"] as? Int)
            // Join with the whole link (as pasted) or the bare code.
            let joined = try await f.smooth(.post, "/community/member", guest, json: #"{"code":"\#(url)"}"#)
            #expect(joined.outcome == "200 1000")
            #expect(Set(joined.result?.keys.map { $0 } ?? []) == ["id", "name", "icon"])
            #expect(joined.result?["id"] as? Int == community)
            #expect(try await f.smooth(.post, "/community/member", guest, json: #"{"code":"\#(code)"}"#).outcome == "400 4013")
            #expect(try await f.smooth(.post, "/community/member", late, json: #"{"code":" \#(code) "}"#).outcome == "200 1000")
            // The joined user is in every open channel (chat's membership follows), not the private one.
            let open = Set(try await f.layout(community, guest).flatMap(\.channels).compactMap { $0["id"] as? Int })
            #expect(open.count == 2 && !open.contains(secretId))
            #expect(try await f.channelMemberships(guest, community: community) == open)
            for bad in [#"{"code":"nope"}"#, #"{"code":""}"#, #"{}"#, #"{"code":"https://x/invite/c/"}"#, #"{"code":"a b"}"#] {
                #expect(try await f.smooth(.post, "/community/member", stranger, json: bad).outcome == "400 4005", "\(bad)")
            }
        }
    }

    @Test("DELETE /community/{id}/member?id=: leave yourself, the owner kicks, the owner leaving hands over or deletes")
    func leaveAndKick() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user("주인")
            let a = try await f.user("가")
            let b = try await f.user("나")
            let c = try await f.user("다")
            let community = try await f.shared(owner, a, b, c)
            let members = { (user: SmoothFixture.Member) in
                try await f.smooth(.get, "/community/\(community)/member", user).result?["members"] as? [[String: Any]] ?? []
            }

            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(b.id)", a).outcome == "400 1401")
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=424242", a).outcome == "400 4007")
            #expect(try await f.smooth(.delete, "/community/\(community)/member", a).outcome == "400 4007")
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(a.id)", try await f.user()).outcome == "400 4002")

            // Leaving: gone from the list, the channels and the community.
            let left = try await f.smooth(.delete, "/community/\(community)/member?id=\(a.id)", a)
            #expect(left.outcome == "200 1000" && left.result == nil)
            #expect(try await f.smooth(.get, "/community/\(community)", a).outcome == "400 4002")
            #expect(try await f.channelMemberships(a, community: community).isEmpty)
            #expect(try await members(owner).map { $0["id"] as? Int } == [owner.id, b.id, c.id])

            // Kicking.
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(b.id)", owner).outcome == "200 1000")
            #expect(try await f.smooth(.get, "/community/\(community)/member", b).outcome == "400 4002")

            // The owner leaves: the member who has belonged longest owns it now.
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(owner.id)", owner).outcome == "200 1000")
            let now = try await members(c)
            #expect(now.map { $0["id"] as? Int } == [c.id])
            #expect(now.first?["role"] as? String == "OWNER")
            #expect(try await f.smooth(.patch, "/community/name", c, json: #"{"id":\#(community),"name":"mine"}"#).outcome == "200 1000")

            // An owner alone leaving deletes it.
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(c.id)", c).outcome == "200 1000")
            #expect(try await f.smooth(.get, "/community/\(community)", c).outcome == "400 4002")
            let db = try #require(f.s.workspaceDatabase)
            var remaining = 0
            for try await n in try await db.query("SELECT count(*) FROM workspaces WHERE alias = \(Int64(community))").decode(Int64.self) {
                remaining = Int(n)
            }
            #expect(remaining == 0)
        }
    }
}
