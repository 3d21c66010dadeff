import Events
import Foundation
import Testing

@testable import PushApp

/// What a notification says, on the message alone.
@Suite("Notification content")
struct NotificationContentTests {
    func message(_ content: String?, files: Int = 0) -> ChatEvents.ChannelMessageCreated {
        ChatEvents.ChannelMessageCreated(
            messageId: MessageID(UUID()), workspaceId: WorkspaceID(UUID()), channelId: ChannelID(UUID()), channelName: "일반",
            sender: .init(userId: UserID(UUID()), email: "a@example.com", nickname: "새싹", profileImage: nil), content: content,
            files: (0..<files).map { "/static/f\($0).jpg" }, createdAt: Date())
    }

    @Test("title names the place; the body folds lines and is cut at 180 characters however many bytes they take")
    func text() {
        let plain = NotificationContent.channel(message("안녕\n하세요"), workspace: "팀", badge: 3)
        #expect(plain.title == "팀 · #일반" && plain.body == "새싹: 안녕 하세요" && plain.badge == 3)
        let long = NotificationContent.channel(message(String(repeating: "가", count: 5_000)), workspace: nil, badge: 1)
        #expect(long.title == "#일반")
        #expect(long.body == "새싹: " + String(repeating: "가", count: 179) + "…")
    }

    @Test("attachments are summarised, with or without text")
    func files() {
        #expect(NotificationContent.channel(message(nil, files: 1), workspace: "팀", badge: 1).body == "새싹: 📎 파일 1개")
        #expect(NotificationContent.channel(message("봐요", files: 3), workspace: "팀", badge: 1).body == "새싹: 봐요 📎 파일 3개")
    }
}
