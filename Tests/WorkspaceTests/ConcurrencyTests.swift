import Foundation
import NIOCore
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SuiteTesting
import Testing

/// Races through the real HTTP path (each request on a connection of its own, so they really run
/// at once); the invariants are checked in the workspace database.
@Suite("Workspace concurrency")
struct ConcurrencyTests {
    /// Workspaces whose owner is not a member, and channels whose owner is not in them: must be none.
    static func orphans(_ s: Stack) async throws -> Int {
        let db = try #require(s.workspaceDatabase)
        var total = 0
        for try await count in try await db.query(
            """
            SELECT (SELECT count(*) FROM workspaces w WHERE NOT EXISTS
                      (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = w.owner_id))
                 + (SELECT count(*) FROM channels c WHERE NOT EXISTS
                      (SELECT 1 FROM channel_members m WHERE m.channel_id = c.id AND m.user_id = c.owner_id))
            """
        ).decode(Int64.self) {
            total = Int(count)
        }
        return total
    }

    @Test("two users joining (by code) and leaving the same workspace concurrently, 15 rounds; double joins race")
    func joinLeave() async throws {
        try await Stack.workspaces { stack in
            let s = stack.onOwnConnections()  // requests really at once, not queued on one connection
            let owner = try await s.user()
            let a = try await s.user()
            let b = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let code = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/invites", owner, json: "{}")), "code")
            let rounds = 15
            try await withThrowingTaskGroup(of: [String].self) { group in
                for user in [a, b] {
                    group.addTask {
                        var outcomes: [String] = []
                        for _ in 0..<rounds {
                            // Two joins at once by the same user: exactly one succeeds.
                            async let first = s.request(.post, "/v1/invites/\(code)", token: user.token)
                            async let second = s.request(.post, "/v1/invites/\(code)", token: user.token)
                            let joins = [outcome(try await first), outcome(try await second)].sorted()
                            outcomes.append("join " + joins.joined(separator: ","))
                            outcomes.append("exit " + outcome(try await s.get("/v1/workspaces/\(wid)/exit", user)))
                        }
                        return outcomes
                    }
                }
                for try await outcomes in group {
                    #expect(outcomes == Array(repeating: ["join 200,400 E12", "exit 200"], count: rounds).flatMap { $0 })
                }
            }
            let members = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/members", owner)))
            #expect(members.map { id($0, "user_id") } == [owner.id])
            let invites = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/invites", owner)))
            #expect(invites.first?["uses"] as? Int == 2 * rounds)
            #expect(try await Self.orphans(s) == 0)
        }
    }

    @Test("ownership transfer racing with the new owner leaving, 15 rounds: never an ownerless workspace")
    func transferVersusLeave() async throws {
        try await Stack.workspaces { stack in
            let s = stack.onOwnConnections()  // requests really at once, not queued on one connection
            let owner = try await s.user()
            let member = try await s.user()
            var transfers = 0
            var leaves = 0
            for _ in 0..<15 {
                let wid = id(try await s.createWorkspace(owner), "workspace_id")
                try await s.invite(member, to: wid, by: owner)
                async let transfer = s.send(.put, "/v1/workspaces/\(wid)/transfer/ownership", owner, json: #"{"owner_id":"\#(member.id)"}"#)
                async let leave = s.get("/v1/workspaces/\(wid)/exit", member)
                let (t, l) = (outcome(try await transfer), outcome(try await leave))
                // Serialised by the workspace lock: either the transfer won (the new owner cannot
                // leave) or the leave won (the target is no longer a member).
                #expect((t == "200" && l == "400 E15") || (t == "400 E13" && l == "200"), "transfer \(t), leave \(l)")
                if t == "200" { transfers += 1 } else { leaves += 1 }
                let detail = try #require(jsonObject(try await s.get("/v1/workspaces/\(wid)", t == "200" ? member : owner)))
                let ownerId = detail["owner_id"] as? String
                let memberIds = (detail["workspaceMembers"] as? [[String: Any]])?.map { id($0, "user_id") } ?? []
                #expect(ownerId.map(memberIds.contains) == true)
            }
            #expect(transfers + leaves == 15)
            #expect(try await Self.orphans(s) == 0)
        }
    }

    @Test("channel ownership transfer racing with the target leaving the channel, 10 rounds")
    func channelTransferVersusLeave() async throws {
        try await Stack.workspaces { stack in
            let s = stack.onOwnConnections()  // requests really at once, not queued on one connection
            let owner = try await s.user()
            let member = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            for round in 0..<10 {
                let cid = id(try await s.createChannel(owner, in: wid, name: "race-\(round)"), "channel_id")
                _ = try await s.request(.post, "/v1/workspaces/\(wid)/channels/\(cid)/join", token: member.token)
                async let transfer = s.send(.put, "/v1/workspaces/\(wid)/channels/\(cid)/transfer/ownership", owner, json: #"{"owner_id":"\#(member.id)"}"#)
                async let leave = s.get("/v1/workspaces/\(wid)/channels/\(cid)/exit", member)
                let (t, l) = (outcome(try await transfer), outcome(try await leave))
                #expect((t == "200" && l == "400 E15") || (t == "400 E13" && l == "200"), "transfer \(t), leave \(l)")
            }
            #expect(try await Self.orphans(s) == 0)
        }
    }

    @Test("ten concurrent creations of one workspace name: exactly one wins, the rest E12")
    func duplicateNames() async throws {
        try await Stack.workspaces { stack in
            let s = stack.onOwnConnections()  // requests really at once, not queued on one connection
            let user = try await s.user()
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask { outcome(try await s.multipartRequest(.post, "/v1/workspaces", user, fields: ["name": "same name"])) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.sorted() == ["200"] + Array(repeating: "400 E12", count: 9))
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", user))).count == 1)
        }
    }
}
