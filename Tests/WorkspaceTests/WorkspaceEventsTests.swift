import Common
import Events
import Foundation
import NIOCore
import HummingbirdTesting
import HTTPTypes
import Kafka
import SuiteTesting
import Testing
import TestSupport

/// What an analytics user or the chat service sees on `workspace.v1`.
@Suite("workspace.v1 events")
struct WorkspaceEventsTests {
    struct Seen: Sendable {
        let type: String
        let subject: String
        let key: String
        let data: [String: String]
    }

    /// Reads `workspace.v1` from the start until `done` holds (20 s at most).
    static func read(_ cluster: EmbeddedKafkaCluster, until done: @escaping @Sendable ([Seen]) -> Bool) async throws -> [Seen] {
        let consumer = try TestKafka.groupConsumer(cluster, group: "analytics-\(UUID().uuidString.prefix(8))", topics: [Topic.workspace.name])
        defer { Task { await consumer.close() } }
        return try await withTimeout(.seconds(20), "workspace.v1 events") {
            var seen: [Seen] = []
            for try await message in consumer.messages {
                let value = message.value ?? []
                let header = try EventCoding.header(from: value)
                let object = try JSONSerialization.jsonObject(with: Data(value)) as? [String: Any]
                let data = (object?["data"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
                seen.append(Seen(type: header.type, subject: header.subject ?? "", key: message.keyString ?? "", data: data))
                if done(seen) { return seen }
            }
            return seen
        }
    }

    @Test("every change is published once, keyed by workspace id, in order per workspace")
    func orderedPerWorkspace() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let a = id(try await s.createWorkspace(owner), "workspace_id")
            let b = id(try await s.createWorkspace(member), "workspace_id")
            try await s.invite(member, to: a, by: owner)
            let channel = id(try await s.createChannel(member, in: a, name: "side"), "channel_id")
            _ = try await s.multipartRequest(.put, "/v1/workspaces/\(a)/channels/\(channel)", member, fields: ["name": "side2"])
            _ = try await s.request(.post, "/v1/workspaces/\(a)/channels/\(channel)/join", token: owner.token)
            _ = try await s.send(.put, "/v1/workspaces/\(a)/channels/\(channel)/transfer/ownership", member, json: #"{"owner_id":"\#(owner.id)"}"#)
            _ = try await s.get("/v1/workspaces/\(a)/channels/\(channel)/exit", member)
            _ = try await s.multipartRequest(.put, "/v1/workspaces/\(a)", owner, fields: ["name": "renamed-\(a.prefix(8))"])
            #expect(try await s.get("/v1/workspaces/\(a)/exit", member).status == .ok)
            _ = try await s.request(.delete, "/v1/workspaces/\(a)/channels/\(channel)", token: owner.token)
            _ = try await s.send(.put, "/v1/workspaces/\(b)/transfer/ownership", member, json: #"{"owner_id":"\#(member.id)"}"#)  // E11, no event
            #expect(try await s.request(.delete, "/v1/workspaces/\(b)", token: member.token).status == .ok)

            let expectedA = [
                "workspace.created", "workspace.channel-created", "workspace.member-joined",  // creation
                "workspace.member-joined",  // invitation
                "workspace.channel-created", "workspace.channel-member-joined",  // member's channel
                "workspace.channel-updated", "workspace.channel-member-joined", "workspace.channel-owner-changed",
                "workspace.channel-member-left", "workspace.updated", "workspace.member-left", "workspace.channel-deleted",
            ]
            let expectedB = ["workspace.created", "workspace.channel-created", "workspace.member-joined", "workspace.deleted"]
            let events = try await Self.read(s.cluster) { seen in
                seen.filter { $0.subject == a }.count >= expectedA.count && seen.filter { $0.subject == b }.count >= expectedB.count
            }
            let ofA = events.filter { $0.subject == a }
            #expect(ofA.map(\.type) == expectedA)
            #expect(events.filter { $0.subject == b }.map(\.type) == expectedB)
            #expect(events.allSatisfy { $0.key == $0.subject })
            // Payloads carry the state after the change.
            #expect(ofA[0].data["ownerId"] == owner.id)
            #expect(ofA[3].data["userId"] == member.id && ofA[3].data["via"] == "invitation")
            #expect(ofA[8].data["ownerId"] == owner.id && ofA[8].data["previousOwnerId"] == member.id)
            #expect(ofA[11].data["userId"] == member.id)
        }
    }
}
