import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Study chat (`/v1/chat/{uid}`): a matched user writes to their partner; either may read the
/// pair's history. Each chat also goes to `study.v1` (`study.chat.sent`), which chat-fanout routes
/// to the gateways whose Socket.IO sessions announced the recipient.
extension StudyAPI {
    static let maxChatCharacters = 1_000
    /// `lastchatDate` meaning "everything" to the app: 2000-01-01T00:00:00.000Z, in milliseconds.
    static let everything: Int64 = 946_684_800_000

    func addChat(to router: some RouterMethods<SuiteRequestContext>) {
        let chat = router.group("study/v1/chat")
        chat.post(":uid") { request, context in await answer { try await send(request, context) } }
        chat.get(":uid") { request, context in await answer { try await history(request, context) } }
    }

    /// `POST /v1/chat/{to}` (`chat`): 200 the chat; 201 the two do not study together (any more);
    /// 406; 501 an empty or over-long chat.
    private func send(_ request: Request, _ context: SuiteRequestContext) async throws -> Response {
        let uid = try await uid(of: request)
        let to = try StudyQueueFields.uid(context.parameters.get("uid") ?? "")
        let text = try await StudyForm.read(request).string("chat")
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, text.count <= Self.maxChatCharacters,
            text.utf8.count <= 4 * Self.maxChatCharacters
        else { throw StudyRefusal.badField }
        // Refusals are answers, not errors: a throw inside would come out wrapped by the transaction.
        let sent = try await postgres.withLiveTransaction(logger: logger) { [users, chats, logger] c -> Result<StudyChat, StudyRefusal> in
            guard let sender = try await users.find(uid, c) else { return .failure(.notRegistered) }
            guard try await chats.studyTogether(uid, to, c) else { return .failure(.code(201)) }
            let chat = try await chats.insert(id: StudyFields.objectId(), from: uid, to: to, chat: text, c)
            try await Outbox.append(
                CloudEvent(
                    source: StudyMatching.source,
                    data: StudyEvents.ChatSent(
                        id: chat.id, from: chat.from, fromNick: sender.nick, to: chat.to, chat: chat.chat, createdAt: chat.createdAt)),
                on: c, logger: logger)
            return .success(chat)
        }
        return try json(StudyChatResponse(try sent.get()))
    }

    /// `GET /v1/chat/{other}?lastchatDate=`: 200 `{payload: [chat]}`, the pair's chats after the
    /// date (exclusive, to the millisecond), oldest first; a missing date means everything; 406;
    /// 501 a malformed date.
    private func history(_ request: Request, _ context: SuiteRequestContext) async throws -> Response {
        let uid = try await uid(of: request)
        let other = try StudyQueueFields.uid(context.parameters.get("uid") ?? "")
        var after = Self.everything
        if let text = request.uri.queryParameters.get("lastchatDate"), !text.isEmpty {
            guard let milliseconds = Timestamp.parseMilliseconds(text) else { throw StudyRefusal.badField }
            after = milliseconds
        }
        let found = try await postgres.withLiveConnection { [users, chats, after] c -> [StudyChat]? in
            guard try await users.find(uid, c) != nil else { return nil }
            return try await chats.history(between: uid, other, afterMilliseconds: after, c)
        }
        guard let found else { throw StudyRefusal.notRegistered }
        return try json(StudyChatHistoryResponse(payload: found.map(StudyChatResponse.init)))
    }
}

/// A chat as the REST answers carry it: `{_id, __v, to, from, chat, createdAt}` (`__v` as the
/// original server's documents had it; one client decodes it).
struct StudyChatResponse: Encodable {
    var _id: String
    var __v = 0
    var to: String
    var from: String
    var chat: String
    var createdAt: String

    init(_ chat: StudyChat) {
        _id = chat.id
        to = chat.to
        from = chat.from
        self.chat = chat.chat
        createdAt = Timestamp.format(chat.createdAt)
    }
}

struct StudyChatHistoryResponse: Encodable {
    var payload: [StudyChatResponse]
}
