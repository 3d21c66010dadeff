import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Smooth's attachments (client contract §2.1), under `/smooth/chat`:
/// - `POST channel/file` (a token): one message whose files are the upload's `image` and
///   `thumbnail`, posted into a channel (`type=community`) or DM room (`type=direct`) named by its
///   integer alias, as the sender the token names; published like any message, so every protocol
///   shows it. Answer: the bare envelope (Smooth's server answered `CommonResponse`).
/// - `GET files/:file` (no token): an attachment of a live message, which Smooth's app loads as
///   a plain URL (`SmoothFileLinks`). Stored names begin with a UUIDv7 (62 random bits), so a URL
///   is known only to those shown the message; a deleted message's files are gone.
extension ChatAPI {
    func addSmoothFileRoutes(to smooth: some RouterMethods<SuiteRequestContext>) {
        smooth.group("channel", context: AuthenticatedContext.self).post("file") { request, context -> SmoothDone in
            let (fields, uploaded) = try await SmoothFileForm.read(request, into: files)
            do {
                let form = try SmoothFileForm(fields: fields, files: uploaded)
                try await postgres.withLiveTransaction(logger: logger) { c in try await postSmoothFile(form, by: context.identity, c) }
                return SmoothDone()
            } catch {
                files.remove(uploaded)
                throw error
            }
        }
        smooth.get("files/:file") { _, context -> Response in
            let raw = context.parameters.get("file") ?? ""
            let name = raw.removingPercentEncoding ?? raw
            // A plain 404 (the edge answers it in Smooth's envelope): nothing is said about why.
            guard ChatFiles.isStoredName(name), try await postgres.withLiveConnection({ try await messages.isLiveAttachment(named: name, $0) }) else {
                return Response(status: .notFound)
            }
            return try await files.response(for: name, context: context)
        }
    }

    /// Posts the upload as `sender`: 2103 when `userId` is not the sender's own integer id, 4004
    /// for a channel they are not in, 4018 for a room they are not a participant of.
    private func postSmoothFile(_ form: SmoothFileForm, by sender: UserID, _ c: PostgresConnection) async throws {
        guard let alias = try await messages.sender(sender, c).alias, alias == form.userId else { throw SmoothError.unauthorised }
        let conversation: Conversation
        let prefix: ChatFiles.Prefix
        switch form.kind {
        case .community:
            // Resolved by alias, then locked by id: the lock serialises the channel's inserts.
            guard let named = try await messages.channel(alias: form.channelId, member: sender, c),
                let channel = try await messages.channel(named.id, in: named.workspaceId, member: sender, lock: true, c)
            else { throw SmoothError.invalidChannel }
            (conversation, prefix) = (.channel(channel), .channel)
        case .direct:
            guard let room = try await rooms.room(alias: form.channelId, participant: sender, lock: true, c) else { throw SmoothError.invalidRoom }
            if room.isPersonal {
                // A personal room's rules (a ban ends the conversation: 2103) and event.
                _ = try await post(MessageDraft(content: nil, nonce: nil, parentId: nil), files: files.paths(form.files, .dm), in: room, by: sender, c)
                return
            }
            (conversation, prefix) = (.room(room), .dm)
        }
        let draft = MessageDraft(content: nil, nonce: nil, parentId: nil)
        _ = try await post(draft, files: files.paths(form.files, prefix), by: sender, in: conversation, c) { Self.created($0, in: conversation) }
    }

    /// The created event of a file message: what `/v1`'s sends publish for the conversation's kind.
    private static func created(_ m: StoredMessage, in conversation: Conversation) -> any EventPayload {
        switch conversation {
        case .channel(let channel):
            ChatEvents.ChannelMessageCreated(
                messageId: m.id, workspaceId: channel.workspaceId, channelId: channel.id, channelName: channel.name, sender: m.sender,
                content: m.content, files: m.files, createdAt: m.createdAt, channelAlias: channel.alias)
        case .room(let room):
            ChatEvents.DirectMessageCreated(
                messageId: m.id, workspaceId: room.workspaceId, roomId: room.id, participants: Array(Set(room.participants)).sorted(),
                sender: m.sender, content: m.content, files: m.files, createdAt: m.createdAt, roomAlias: room.alias)
        }
    }
}
