import Events
import Foundation

/// What a notification says, in the seed apps' style: the title names the place
/// (`workspace · #channel`, or `workspace · DM`), the body the sender and the text (files
/// summarised), the badge the recipient's unread total, and `data` the ids a client needs to open
/// the conversation. Provider-neutral; each provider client maps it to its own request.
struct NotificationContent: Codable, Sendable, Equatable {
    var title: String
    var body: String
    var badge: Int
    /// String values only (FCM's `data` map takes strings): `type` (`channel` | `dm`),
    /// `workspace_id` (absent for a personal room), `channel_id` + `chat_id` or `room_id` + `dm_id`.
    var data: [String: String]

    /// Longest body text, in characters (providers truncate around 4 KB; lock screens far sooner).
    static let maxBodyCharacters = 180

    static func channel(_ m: ChatEvents.ChannelMessageCreated, workspace: String?, badge: Int) -> Self {
        Self(
            title: place(workspace, "#\(m.channelName)"), body: body(m.sender.nickname, m.content, files: m.files.count), badge: badge,
            data: [
                "type": "channel", "workspace_id": m.workspaceId.description, "channel_id": m.channelId.description, "chat_id": m.messageId.description,
            ])
    }

    static func dm(_ m: ChatEvents.DirectMessageCreated, workspace: String?, badge: Int) -> Self {
        Self(
            title: place(workspace, m.roomName ?? "DM"), body: body(m.sender.nickname, m.content, files: m.files.count), badge: badge,
            data: ["type": "dm", "workspace_id": m.workspaceId?.description, "room_id": m.roomId.description, "dm_id": m.messageId.description]
                .compactMapValues { $0 })
    }

    private static func place(_ workspace: String?, _ conversation: String) -> String {
        guard let workspace, !workspace.isEmpty else { return conversation }
        return "\(workspace) · \(conversation)"
    }

    private static func body(_ sender: String, _ content: String?, files: Int) -> String {
        var text = (content ?? "").trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: " ")
        if text.count > maxBodyCharacters { text = String(text.prefix(maxBodyCharacters - 1)) + "…" }
        let attachment = files == 0 ? nil : (files == 1 ? "📎 파일 1개" : "📎 파일 \(files)개")
        let shown = [text.isEmpty ? nil : text, attachment].compactMap { $0 }.joined(separator: " ")
        return "\(sender): \(shown)"
    }

    // MARK: the study app (client contract §3.2): Korean, as the app speaks; no unread badge.

    static let studyTitle = "새싹 스터디"

    static func studyRequest(_ e: StudyEvents.RequestSent) -> Self {
        Self(title: studyTitle, body: "\(e.fromNick)님이 함께 공부하자고 요청했어요", badge: 0, data: ["type": "studyrequest", "uid": e.fromUid])
    }

    static func studyMatched(_ e: StudyEvents.Matched) -> Self {
        Self(title: studyTitle, body: "\(e.acceptorNick)님과 스터디가 매칭되었어요", badge: 0, data: ["type": "studyaccept", "uid": e.acceptorUid])
    }

    static func studyDodged(_ e: StudyEvents.Dodged) -> Self {
        Self(title: studyTitle, body: "\(e.nick)님이 스터디를 취소했어요", badge: 0, data: ["type": "dodge", "uid": e.uid])
    }

    static func studyChat(_ e: StudyEvents.ChatSent) -> Self {
        var text = e.chat.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: " ")
        if text.count > maxBodyCharacters { text = String(text.prefix(maxBodyCharacters - 1)) + "…" }
        return Self(title: e.fromNick, body: text, badge: 0, data: ["type": "chat", "uid": e.from, "_id": e.id])
    }
}
