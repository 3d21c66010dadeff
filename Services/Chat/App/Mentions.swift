import Events
import Foundation
import Logging
import PostgresNIO

/// @mentions in a message's text: `<@user-id>` (what a client's autocomplete inserts) or
/// `@nickname` followed by the end of the text, a space or punctuation. Only people who can read
/// the conversation count (channel members; a DM room's participants), so a mention never tells
/// an outsider anything and never notifies one.
enum Mentions {
    /// The ids written as `<@uuid>` in `text`.
    static func explicitIDs(in text: String) -> [UUID] {
        var result: [UUID] = []
        var rest = text[...]
        while let open = rest.range(of: "<@") {
            rest = rest[open.upperBound...]
            guard let close = rest.firstIndex(of: ">") else { break }
            if let id = UUID(parsing: String(rest[..<close])) { result.append(id) }
            rest = rest[close...]
        }
        return result
    }

    /// Whether `text` mentions `nickname` as `@nickname` standing alone (not a prefix of a longer word).
    static func mentions(_ nickname: String, in text: String) -> Bool {
        guard !nickname.isEmpty else { return false }
        let token = "@" + nickname
        var searchRange = text.startIndex..<text.endIndex
        while let found = text.range(of: token, range: searchRange) {
            if found.upperBound == text.endIndex { return true }
            let next = text[found.upperBound]
            if !(next.isLetter || next.isNumber || next == "_") { return true }
            searchRange = found.upperBound..<text.endIndex
        }
        return false
    }

    /// Whether `text` can mention anyone (it has an `@`): only then does a send resolve mentions.
    static func mayMention(_ text: String?) -> Bool {
        text?.contains("@") ?? false
    }

    /// The readers of `conversation` that `text` mentions, in a stable order. PostgreSQL narrows
    /// the candidates to members whose nickname (or id) occurs after an `@`; the exact rule is
    /// checked here.
    static func resolve(in text: String?, conversation: Conversation, _ c: PostgresConnection, logger: Logger) async throws -> [UserID] {
        guard let text, mayMention(text) else { return [] }
        let explicit = explicitIDs(in: text)
        let readers: PostgresRowSequence
        switch conversation {
        case .channel(let channel):
            readers = try await c.query(
                """
                SELECT m.user_id, coalesce(p.nickname, '') FROM channel_members m LEFT JOIN user_profiles p ON p.user_id = m.user_id
                WHERE m.channel_id = \(channel.id.uuid)
                  AND (m.user_id = ANY(\(explicit)) OR (p.nickname <> '' AND strpos(\(text), '@' || p.nickname) > 0))
                """, logger: logger)
        case .room(let room):
            readers = try await c.query(
                """
                SELECT u.id, coalesce(p.nickname, '') FROM unnest(\(room.participants.map(\.uuid))::uuid[]) AS u(id)
                LEFT JOIN user_profiles p ON p.user_id = u.id
                """, logger: logger)
        }
        var found: [UserID] = []
        for try await (id, nickname) in readers.decode((UUID, String).self) {
            let user = UserID(id)
            if !found.contains(user), explicit.contains(id) || mentions(nickname, in: text) { found.append(user) }
        }
        return found.sorted()
    }
}
