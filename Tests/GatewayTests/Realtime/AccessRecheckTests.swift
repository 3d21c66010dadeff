import Foundation
import HummingbirdTesting
import GatewayApp
import HTTPTypes
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

/// Access is checked again when it may have changed: a native session resumed from a checkpoint
/// follows only what its user can still read, and Socket.IO namespaces joined with credentials
/// end when their user leaves (or the conversation is deleted).
@Suite("Access re-checked on resume and revoked on every protocol", .serialized)
struct AccessRecheckTests {
    @Test("a native session resumed from its checkpoint after its user left a channel (no gateway watching) gets conversation.removed and none of its messages")
    func resumeRechecksMembership() async throws {
        let gatewayId = "gw-recheck-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(
            services: [.auth, .workspace, .chat], gateway: NativeProtocolTests.environment("gw-stack-\(UUID().uuidString.prefix(8).lowercased())")
        ) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, general) = try await s.sharedChannel(a, b)
            let extra = id(try await s.createChannel(a, in: wid), "channel_id")
            #expect(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/join", b, json: "{}").status == .ok)
            try await s.waitForChatMember(b.id, channel: extra)
            let replica = try await RealFanoutTests.startReplica(s, "fanout-recheck")
            let environment = s.gatewayEnvironment.merging(NativeProtocolTests.environment(gatewayId)) { $1 }
            let settings = ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: environment, arguments: ["gateway"])
            let gateway = try await RunningService.start { try await GatewayApp.buildApplication(settings: settings, logger: TestDatabase.logger) }
            let (bob, ready) = try await NativeProtocolTests.connect(try #require(gateway.client.port), b)
            let session = try #require(ready["session_id"] as? String)
            let seq = bob.lastSeq
            // Stopped: the session is checkpointed with both channels; then bob leaves one while
            // no gateway holds his session (nobody can revoke it live).
            try await gateway.stop()
            _ = try await bob.closed()
            #expect(try await s.get("/v1/workspaces/\(wid)/channels/\(extra)/exit", b).status == .ok)
            try await s.waitForChatMember(b.id, channel: extra, present: false)

            // Resumed on the stack's gateway, which rebuilds the session from the checkpoint.
            let resumed = NativeTestClient(port: try #require(s.client.port))
            _ = try await resumed.waitForOp("hello")
            resumed.resume(b.token, session: session, seq: seq)
            _ = try await resumed.waitForOp("resumed")
            let removed = resumed.dispatches("conversation.removed").compactMap { $0.data["conversation_id"] as? String }
            #expect(removed == [extra], "\(removed)")

            // Live: the channel still followed delivers, the one left does not.
            try await NativeProtocolTests.awaitInterest(s, a, "/v1/workspaces/\(wid)/channels/\(general)/chats", [resumed])
            let secret = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/chats", a, json: #"{"content":"나간 뒤"}"#)), "chat_id")
            let visible = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(general)/chats", a, json: #"{"content":"일반"}"#)), "chat_id")
            try await resumed.waitFor("the followed channel's message") { _ in
                resumed.dispatches("channel.message").contains { $0.data["chat_id"] as? String == visible }
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!resumed.dispatches("channel.message").contains { $0.data["chat_id"] as? String == secret })
            await resumed.kill()
            try await replica.stop()
        }
    }

    @Test("Socket.IO: a credentialed namespace ends (disconnect packet) when its user leaves the channel; deleting a channel ends anonymous joins too")
    func socketIORevocation() async throws {
        let gatewayId = "gw-sio-revoke-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": gatewayId]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let (wid, general) = try await s.sharedChannel(owner, member)
            let extra = id(try await s.createChannel(owner, in: wid), "channel_id")
            #expect(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/join", member, json: "{}").status == .ok)
            try await s.waitForChatMember(member.id, channel: extra)
            let port = try #require(s.client.port)
            try await TestFanoutStandIn.run(cluster: s.cluster, gatewayId: gatewayId) { _ in
                let credentialed = try PythonSocketClient.start(
                    .eio4, port: port, namespaces: [("/ws-channel-\(extra)", "channel"), ("/ws-channel-\(general)", "channel")], token: member.token
                )
                let anonymous = try PythonSocketClient.start(.eio4, port: port, namespaces: [("/ws-channel-\(extra)", "channel")])
                try await credentialed.waitFor("ready")
                try await anonymous.waitFor("ready")

                #expect(try await s.get("/v1/workspaces/\(wid)/channels/\(extra)/exit", member).status == .ok)
                try await eventually("the member's namespace of the channel left ends", timeout: .seconds(30)) {
                    credentialed.lines("disconnected").contains { $0["namespace"] as? String == "/ws-channel-\(extra)" }
                }
                let secret = try #require(
                    jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/chats", owner, json: #"{"content":"나간 뒤"}"#)))
                let visible = try #require(
                    jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(general)/chats", owner, json: #"{"content":"일반"}"#)))
                try await eventually("the general channel's message", timeout: .seconds(30)) {
                    credentialed.events("channel").contains { $0["chat_id"] as? String == visible["chat_id"] as? String }
                }
                // The anonymous join is nobody's: a member leaving does not end it (it still receives).
                try await eventually("the anonymous client still receives", timeout: .seconds(30)) {
                    anonymous.events("channel").contains { $0["chat_id"] as? String == secret["chat_id"] as? String }
                }
                #expect(!credentialed.events("channel").contains { $0["chat_id"] as? String == secret["chat_id"] as? String })
                #expect(!credentialed.lines("disconnected").contains { $0["namespace"] as? String == "/ws-channel-\(general)" })
                #expect(anonymous.lines("disconnected").isEmpty)

                // Deleting the channel ends every join of it, anonymous ones included.
                #expect(try await s.send(.delete, "/v1/workspaces/\(wid)/channels/\(extra)", owner, json: "{}").status == .ok)
                try await eventually("the anonymous namespace of the deleted channel ends", timeout: .seconds(30)) {
                    anonymous.lines("disconnected").contains { $0["namespace"] as? String == "/ws-channel-\(extra)" }
                }
                try await credentialed.stop()
                try await anonymous.stop()
            }
        }
    }
}
