import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceKit
import SuiteTesting
import Testing

/// A plain channel send takes the one-statement path (ChannelDirectSend.swift, docs/benchmarks.md
/// part 10); a reply takes the transaction. Read from chat's `chat_channel_sends_total` counter.
/// The registry is the test process's, shared with suites running at the same time, so only
/// growth is checked: nothing else can make the direct count grow if the route stops using it.
@Suite("Channel sends: the one-statement path")
struct ChannelSendPathTests {
    /// `chat_channel_sends_total{path="…"}` in the process's metrics (0 before the first).
    static func sends(_ path: String) -> Double {
        let text = String(decoding: Observability.renderMetrics(), as: UTF8.self)
        let prefix = #"chat_channel_sends_total{path="\#(path)"} "#
        let line = text.split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Double($0.dropFirst(prefix.count)) } ?? 0
    }

    @Test("plain sends are counted on the direct path; a reply on the transaction")
    func plainSendsGoDirect() async throws {
        Observability.bootstrapMetrics()  // before chat makes its counters
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("보내는이")
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let channel = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
            try await s.waitForChatMember(owner.id, channel: channel)
            let chats = "/v1/workspaces/\(wid)/channels/\(channel)/chats"

            let direct = Self.sends("direct")
            var last = ""
            for n in 0..<5 {
                let response = try await s.multipartRequest(.post, chats, owner, fields: ["content": "plain \(n)"])
                #expect(response.status == .ok)
                let sent: [String: Any] = try #require(jsonObject(response))
                last = id(sent, "chat_id")
            }
            #expect(Self.sends("direct") - direct >= 5)

            let transaction = Self.sends("transaction")
            let reply = try await s.send(.post, chats, owner, json: #"{"content":"a reply","parent_id":"\#(last)"}"#)
            #expect(reply.status == .ok)
            #expect(Self.sends("transaction") - transaction >= 1)
        }
    }
}
