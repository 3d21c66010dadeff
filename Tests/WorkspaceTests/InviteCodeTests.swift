import Foundation
import NIOCore
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SuiteTesting
import Testing

@Suite("Invite codes")
struct InviteCodeTests {
    @Test("create (shape, validation), join by code, max uses, revoke, expiry — unusable codes are E13")
    func lifecycle() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let guests = [try await s.user(), try await s.user(), try await s.user()]
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            let uri = "/v1/workspaces/\(wid)/invites"
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"maxUses":0}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"expiresInSeconds":5}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"expiresInSeconds":99999999}"#)) == "400 E11")

            let created = try await s.send(.post, uri, member, json: #"{"maxUses":2,"expiresInSeconds":3600}"#)
            #expect(created.status == .ok)
            try expectContractDates(created)
            let invite = try #require(jsonObject(created))
            #expect(Set(invite.keys) == ["code", "workspace_id", "creator_id", "maxUses", "uses", "expiresAt", "createdAt"])
            let code = try #require(invite["code"] as? String)
            #expect(code.count == 10 && invite["creator_id"] as? String == member.id && invite["uses"] as? Int == 0)

            let joined = try await s.request(.post, "/v1/invites/\(code)", token: guests[0].token)
            #expect(joined.status == .ok)
            #expect(jsonObject(joined)?["workspace_id"] as? String == wid && jsonObject(joined)?["coverImage"] is String)
            #expect(outcome(try await s.request(.post, "/v1/invites/\(code)", token: guests[0].token)) == "400 E12")
            #expect(try await s.request(.post, "/v1/invites/\(code)", token: guests[1].token).status == .ok)
            #expect(outcome(try await s.request(.post, "/v1/invites/\(code)", token: guests[2].token)) == "400 E13")  // used up
            let mine = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/my-channels", guests[1])))
            #expect(mine.map { $0["name"] as? String } == ["일반"])
            let listed = try #require(jsonArray(try await s.get(uri, owner)))
            #expect(listed.first { $0["code"] as? String == code }?["uses"] as? Int == 2)

            // No body at all means the defaults; a required field still fails without one.
            let bare = try await s.request(.post, uri, token: owner.token)
            #expect(bare.status == .ok && jsonObject(bare)?["maxUses"] == nil && jsonObject(bare)?["expiresAt"] is String)
            #expect(outcome(try await s.request(.put, "/v1/workspaces/\(wid)/transfer/ownership", token: owner.token)) == "400 E11")

            // Revoked by its creator (a member): gone from the list, unusable.
            let open = id(jsonObject(try await s.send(.post, uri, owner, json: "{}")), "code")
            let mineToRevoke = id(jsonObject(try await s.send(.post, uri, member, json: "{}")), "code")
            #expect(outcome(try await s.request(.delete, "\(uri)/\(open)", token: member.token)) == "400 E14")
            #expect(try await s.request(.delete, "\(uri)/\(mineToRevoke)", token: member.token).status == .ok)
            #expect(outcome(try await s.request(.post, "/v1/invites/\(mineToRevoke)", token: guests[2].token)) == "400 E13")
            #expect(outcome(try await s.request(.delete, "\(uri)/\(mineToRevoke)", token: owner.token)) == "400 E13")

            // Expired (moved into the past in the database; the API's minimum lifetime is 60 s).
            let db = try #require(s.workspaceDatabase)
            _ = try await db.query("UPDATE invites SET expires_at = now() - interval '1 second' WHERE code = \(open)")
            #expect(outcome(try await s.request(.post, "/v1/invites/\(open)", token: guests[2].token)) == "400 E13")
            #expect(outcome(try await s.request(.post, "/v1/invites/nonexistent", token: guests[2].token)) == "400 E13")
            #expect(outcome(try await s.request(.post, "/v1/invites/\(open)", token: nil)) == "401 E02")
        }
    }

    @Test("a code of a deleted workspace is unusable")
    func deletedWorkspace() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let guest = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let code = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/invites", owner, json: "{}")), "code")
            #expect(try await s.request(.delete, "/v1/workspaces/\(wid)", token: owner.token).status == .ok)
            #expect(outcome(try await s.request(.post, "/v1/invites/\(code)", token: guest.token)) == "400 E13")
        }
    }
}
