import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Additive routes on a message, alike for channels and DM rooms (`{prefix}` is
/// `/v1/workspaces/{w}/channels/{c}` or `/v1/workspaces/{w}/dms/{r}`):
/// - `PUT {prefix}/chats/{chat_id}` `{content}`: the sender edits the text → the message.
/// - `DELETE {prefix}/chats/{chat_id}`: the sender deletes it (text and files are gone) → 200.
/// - `PUT` / `DELETE {prefix}/chats/{chat_id}/reactions/{emoji}`: any reader reacts → `[{emoji, count, users}]`.
/// Only readers of the conversation reach its messages (else E13); a message of someone else is E14.
extension ChatAPI {
    private struct EditBody: Decodable { var content: String? }

    /// Mounted at `kind.path` under `/v1`.
    func messageChangeRoutes(_ kind: ConversationKind) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.put("chats/:chat") { request, context -> JSONResponse in
            let me = context.identity
            let messageId: MessageID = try pathID(context, "chat")
            let body = try await request.decodeBody(as: EditBody.self, context: context)
            return try await postgres.withLiveTransaction(logger: logger) { c in
                let conversation = try await conversation(kind, context, lock: false, c)
                var message = try await ownMessage(messageId, in: conversation, sender: me, c)
                let content = try MessageForm.validatedContent(body.content, hasFiles: !message.files.isEmpty)
                // The same text again changes nothing (a retried edit).
                guard content != message.content else { return JSONResponse(MessageResponse(message, in: conversation)) }
                message.content = content
                message.mentions = try await Mentions.resolve(in: content, conversation: conversation, c, logger: logger)
                message.editedAt = try await messages.edit(messageId, content: content, mentions: message.mentions, c)
                try await append(
                    ChatEvents.MessageEdited(
                        messageId: messageId, workspaceId: conversation.workspaceId, conversation: conversation.event, senderId: me,
                        content: content, mentions: message.mentionsOrNil, editedAt: message.editedAt ?? Date(), senderAlias: message.sender.alias
                    ), c)
                return JSONResponse(MessageResponse(message, in: conversation))
            }
        }
        routes.delete("chats/:chat") { request, context -> HTTPResponse.Status in
            let me = context.identity
            let messageId: MessageID = try pathID(context, "chat")
            let removed = try await postgres.withLiveTransaction(logger: logger) { c -> [String] in
                let conversation = try await conversation(kind, context, lock: false, c)
                let message = try await ownMessage(messageId, in: conversation, sender: me, c)
                let deletedAt = try await messages.delete(messageId, c)
                try await append(
                    ChatEvents.MessageDeleted(
                        messageId: messageId, workspaceId: conversation.workspaceId, conversation: conversation.event, senderId: me,
                        deletedAt: deletedAt
                    ), c)
                return message.files
            }
            // After the commit: nothing refers to the files any more.
            files.remove(paths: removed)
            return .ok
        }
        for present in [true, false] {
            routes.on("chats/:chat/reactions/:emoji", method: present ? .put : .delete) { request, context -> JSONResponse in
                let me = context.identity
                let messageId: MessageID = try pathID(context, "chat")
                guard let emoji = ReactionStore.validEmoji(context.parameters.get("emoji") ?? "") else {
                    throw APIError.badRequest("emoji must be 1 to 32 characters without spaces")
                }
                return try await postgres.withLiveTransaction(logger: logger) { c in
                    let conversation = try await conversation(kind, context, lock: false, c)
                    guard let message = try await messages.lockedMessage(messageId, in: conversation, c) else { throw APIError.notFound("message") }
                    guard try await reactions.set(emoji, by: me, on: messageId, present: present, c) else {
                        return JSONResponse(array: message.reactions)
                    }
                    let summary = try await reactions.refreshSummary(of: messageId, c)
                    try await append(
                        ChatEvents.ReactionsChanged(
                            messageId: messageId, workspaceId: conversation.workspaceId, conversation: conversation.event, userId: me,
                            emoji: emoji, added: present, reactions: summary
                        ), c)
                    return JSONResponse(array: summary)
                }
            }
        }
        return routes
    }

    /// The caller's own live message in the conversation, locked: E13 when there is none, E14
    /// when someone else sent it.
    private func ownMessage(_ id: MessageID, in conversation: Conversation, sender: UserID, _ c: PostgresConnection) async throws -> StoredMessage {
        guard let message = try await messages.lockedMessage(id, in: conversation, c) else { throw APIError.notFound("message") }
        guard message.sender.userId == sender else { throw APIError.forbidden("not the sender") }
        return message
    }
}
