import ChatInternalAPI
import Events
import Foundation
import HTTPTypes
import Testing

/// The wire formats chat writes and the gateway reads, without either service.
@Suite("Chat's internal API")
struct ChatInternalAPITests {
    let conversation = UUID(uuidString: "0190F5A4-0000-7000-8000-00000000000A")!
    let message = UUID(uuidString: "0190F5A4-0000-7000-8000-00000000000B")!

    @Test func pathsAreUnderThePrefixWithLowerCaseIds() {
        let user = UserID(conversation)
        #expect(
            ChatInternal.ReaderCheck.path(conversation: conversation, user: message)
                == "/internal/v1/conversations/0190f5a4-0000-7000-8000-00000000000a/readers/0190f5a4-0000-7000-8000-00000000000b")
        #expect(ChatInternal.Session.path(user: user) == "/internal/v1/users/0190f5a4-0000-7000-8000-00000000000a/session")
        #expect(ChatInternal.Replay.path(user: user) == "/internal/v1/users/0190f5a4-0000-7000-8000-00000000000a/replay")
    }

    @Test func readableRoundTripsThroughHeaders() {
        let readable = ChatInternal.Readable(kind: .dm, workspaceId: conversation)
        let fields = readable.headerFields
        #expect(fields[ChatInternal.ReaderCheck.kindHeader] == "dm")
        #expect(fields[ChatInternal.ReaderCheck.workspaceHeader] == "0190f5a4-0000-7000-8000-00000000000a")
        #expect(ChatInternal.Readable { fields[$0] } == readable)
        // A missing kind reads as a channel; a missing workspace as none.
        #expect(ChatInternal.Readable { _ in nil } == ChatInternal.Readable(kind: .channel, workspaceId: nil))
    }

    @Test func replayLinesRoundTrip() throws {
        let json = #"{"chat_id":"x","content":"a\tb"}"#
        let lines: [ChatInternal.ReplayLine] = [
            .removed(conversation),
            .message(.init(kind: .channel, conversationId: conversation, messageId: message, createdAtMilliseconds: 1_700_000_000_123, json: json)),
            .message(.init(kind: .dm, conversationId: conversation, messageId: message, createdAtMilliseconds: 5, json: "{}")),
        ]
        let body = lines.map(\.text).joined()
        #expect(body.hasPrefix("conversation.removed\t0190f5a4-0000-7000-8000-00000000000a\nchannel.message\t0190f5a4"))
        for line in lines {
            #expect(ChatInternal.ReplayLine(line.text.dropLast()) == line)
        }
        let answer = try ChatInternal.ReplayAnswer(parsing: body)
        #expect(answer.removed == [conversation])
        #expect(answer.messages.map(\.type) == ["channel.message", "dm.message"])
        #expect(answer.messages.first?.json == json)
        #expect(throws: ChatInternal.MalformedReplay.self) { try ChatInternal.ReplayAnswer(parsing: "channel.message\tnot-an-id\n") }
    }

    @Test func replayRequestEncodesLowerCaseIdsAndIsValidated() throws {
        let request = ChatInternal.ReplayRequest(cursors: [.init(conversation_id: conversation, after_ms: 42)], limit: 10)
        let text = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        #expect(
            text.contains(#"{"conversation_id":"0190f5a4-0000-7000-8000-00000000000a","after_ms":42}"#)
                || text.contains(#"{"after_ms":42,"conversation_id":"0190f5a4-0000-7000-8000-00000000000a"}"#))
        #expect(try JSONDecoder().decode(ChatInternal.ReplayRequest.self, from: Data(text.utf8)) == request)
        #expect(request.isValid)
        #expect(!ChatInternal.ReplayRequest(cursors: [], limit: 0).isValid)
    }

    @Test func sessionSnapshotDecodesTheDocumentedShape() throws {
        let text = """
            {"workspaces":[{"workspace_id":"0190f5a4-0000-7000-8000-00000000000a"}],\
            "channels":[{"channel_id":"0190f5a4-0000-7000-8000-00000000000b","workspace_id":"0190f5a4-0000-7000-8000-00000000000a","name":"일반","unread_count":3}],\
            "dms":[{"room_id":"0190f5a4-0000-7000-8000-00000000000b","workspace_id":"0190f5a4-0000-7000-8000-00000000000a","unread_count":0}]}
            """
        let snapshot = try JSONDecoder().decode(ChatInternal.SessionSnapshot.self, from: Data(text.utf8))
        #expect(snapshot.workspaces.map(\.workspace_id.uuid) == [conversation])
        #expect(snapshot.channels.first?.name == "일반" && snapshot.channels.first?.unread_count == 3)
        #expect(snapshot.dms.first?.user_id == nil)
    }
}
