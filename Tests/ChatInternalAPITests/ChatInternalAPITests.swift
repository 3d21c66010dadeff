import ChatInternalAPI
import ClientContract
import Events
import Foundation
import HTTPTypes
import NIOCore
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

    @Test func changeLinesRoundTripAfterTheMessages() throws {
        let edited = #"{"conversation_id":"x","kind":"channel","content":"a\tb"}"#
        let lines: [ChatInternal.ReplayLine] = [
            .removed(message),
            .message(.init(kind: .dm, conversationId: conversation, messageId: message, createdAtMilliseconds: 7, json: "{}")),
            .change(.init(change: .edited, conversationId: conversation, messageId: message, atMilliseconds: 1_700_000_000_123, json: edited)),
            .change(.init(change: .deleted, conversationId: conversation, messageId: message, atMilliseconds: 1_700_000_000_124, json: "{}")),
        ]
        #expect(
            lines[2].text
                == "message.edited\t0190f5a4-0000-7000-8000-00000000000a\t0190f5a4-0000-7000-8000-00000000000b\t1700000000123\t\(edited)\n")
        #expect(lines[3].text.hasPrefix("message.deleted\t0190f5a4-0000-7000-8000-00000000000a\t"))
        #expect(
            ChatInternal.ReplayLine.changeHead(.deleted, conversationId: conversation, messageId: message, atMilliseconds: 1_700_000_000_124) + "{}\n"
                == lines[3].text)
        for line in lines {
            #expect(ChatInternal.ReplayLine(line.text.dropLast()) == line)
        }
        let answer = try ChatInternal.ReplayAnswer(parsing: lines.map(\.text).joined())
        #expect(answer.removed == [message])
        #expect(answer.messages.map(\.type) == ["dm.message"])
        #expect(answer.changes.map(\.type) == ["message.edited", "message.deleted"])
        #expect(answer.changes.map(\.atMilliseconds) == [1_700_000_000_123, 1_700_000_000_124])
        #expect(answer.changes.first?.json == edited)
        // An answer without change lines (what chat wrote before them) still parses, with none.
        let old = try ChatInternal.ReplayAnswer(parsing: lines.prefix(2).map(\.text).joined())
        #expect(old == ChatInternal.ReplayAnswer(messages: old.messages, removed: [message]) && old.changes.isEmpty && old.messages.count == 1)
        #expect(try ChatInternal.ReplayAnswer(parsing: "") == ChatInternal.ReplayAnswer())
    }

    @Test func malformedChangeLinesAreRejected() {
        let c = "0190f5a4-0000-7000-8000-00000000000a"
        let m = "0190f5a4-0000-7000-8000-00000000000b"
        let malformed = [
            "message.edited\t\(c)\t\(m)\t12",  // no JSON field
            "message.edited\t\(c)\t\(m)",
            "message.deleted\tnot-an-id\t\(m)\t12\t{}",
            "message.deleted\t\(c)\tnot-an-id\t12\t{}",
            "message.deleted\t\(c)\t\(m)\t12.5\t{}",  // not integer milliseconds
            "message.deleted\t\(c)\t\(m)\t\t{}",
            "message.reacted\t\(c)\t\(m)\t12\t{}",  // not a change kind
            "MESSAGE.EDITED\t\(c)\t\(m)\t12\t{}",
            "message.edited \(c) \(m) 12 {}",
        ]
        for line in malformed {
            #expect(ChatInternal.ReplayLine(Substring(line)) == nil, "\(line)")
            #expect(throws: ChatInternal.MalformedReplay.self) { try ChatInternal.ReplayAnswer(parsing: "conversation.removed\t\(c)\n\(line)\n") }
        }
        // The JSON field is the rest of the line, tabs included.
        #expect(ChatInternal.ReplayLine("message.deleted\t\(c)\t\(m)\t12\t{\"a\":\"\t\"}") != nil)
    }

    @Test func messageChangePayloadWritesTheDocumentedJSON() throws {
        let sender = UserID(UUID(uuidString: "0190F5A4-0000-7000-8000-00000000000C")!)
        let mentioned = UserID(UUID(uuidString: "0190F5A4-0000-7000-8000-00000000000D")!)
        let workspace = WorkspaceID(UUID(uuidString: "0190F5A4-0000-7000-8000-00000000000E")!)
        let at = Date(timeIntervalSince1970: 1_700_000_000.123)
        func text(_ payload: MessageChangePayload) -> String { String(buffer: payload.jsonBuffer) }

        let edited = MessageChangePayload(
            edited: ChatEvents.MessageEdited(
                messageId: MessageID(message), workspaceId: workspace, conversation: .channel(ChannelID(conversation)), senderId: sender,
                content: "새 \"글\"\n", mentions: [mentioned], editedAt: at))
        #expect(edited.change == .edited && edited.kind == .channel && edited.at == at)
        #expect(
            text(edited)
                == #"{"conversation_id":"0190f5a4-0000-7000-8000-00000000000a","kind":"channel","chat_id":"0190f5a4-0000-7000-8000-00000000000b","#
                + #""user_id":"0190f5a4-0000-7000-8000-00000000000c","content":"새 \"글\"\n","#
                + #""mentions":["0190f5a4-0000-7000-8000-00000000000d"],"editedAt":"2023-11-14T22:13:20.123Z"}"#)

        // No text left (only files) → null; no mentions, nil or empty → no key.
        let filesOnly = MessageChangePayload(
            edited: ChatEvents.MessageEdited(
                messageId: MessageID(message), workspaceId: workspace, conversation: .room(RoomID(conversation), participants: [sender, mentioned]),
                senderId: sender, content: nil, mentions: nil, editedAt: at))
        let expectedFilesOnly =
            #"{"conversation_id":"0190f5a4-0000-7000-8000-00000000000a","kind":"dm","chat_id":"0190f5a4-0000-7000-8000-00000000000b","#
            + #""user_id":"0190f5a4-0000-7000-8000-00000000000c","content":null,"editedAt":"2023-11-14T22:13:20.123Z"}"#
        #expect(text(filesOnly) == expectedFilesOnly)
        var emptyMentions = filesOnly
        emptyMentions.mentions = []
        #expect(text(emptyMentions) == expectedFilesOnly)

        let deleted = MessageChangePayload(
            deleted: ChatEvents.MessageDeleted(
                messageId: MessageID(message), workspaceId: workspace, conversation: .room(RoomID(conversation), participants: [sender]), senderId: sender,
                deletedAt: at))
        #expect(
            text(deleted)
                == #"{"conversation_id":"0190f5a4-0000-7000-8000-00000000000a","kind":"dm","chat_id":"0190f5a4-0000-7000-8000-00000000000b","#
                + #""user_id":"0190f5a4-0000-7000-8000-00000000000c","deletedAt":"2023-11-14T22:13:20.123Z"}"#)
        #expect(
            deleted
                == MessageChangePayload(change: .deleted, kind: .dm, conversationId: conversation, messageId: message, senderId: sender, at: at))
        // A deletion writes neither text nor mentions, whatever it holds.
        var stray = deleted
        stray.content = "x"
        stray.mentions = [mentioned]
        #expect(text(stray) == text(deleted))

        // The replay line made from a payload: its time in milliseconds, its JSON as written.
        let line = ChatInternal.ReplayedChange(deleted)
        #expect(line.type == "message.deleted" && line.atMilliseconds == 1_700_000_000_123 && line.json == text(deleted))
        #expect(line.conversationId == conversation && line.messageId == message)
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
