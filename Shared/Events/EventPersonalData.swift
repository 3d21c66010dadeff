/// Which fields of which event types hold personal data (PII) beyond opaque ids: e-mail
/// addresses, names people chose, message text, device names and push tokens. Analytics exports
/// (`chatsuite events export`) null these out unless asked not to; docs/analytics.md lists them.
/// Paths are inside `data`, dot-separated for nested objects (`sender.email`). EventsTests checks
/// that every path names a property of the type's schema.
public enum EventPersonalData {
    /// Event type → paths in `data`. Types not listed carry ids, times, counts and enums only
    /// (plus workspace and channel names, which are shared team content, not personal data).
    public static let fields: [String: [String]] = [
        AuthEvents.UserRegistered.eventType: ["email", "nickname", "profileImage"],
        AuthEvents.UserProfileUpdated.eventType: ["email", "nickname", "profileImage"],
        AuthEvents.DeviceTokenAdded.eventType: ["token"],
        AuthEvents.DeviceTokensRemoved.eventType: ["tokens"],
        ChatEvents.ChannelMessageCreated.eventType: ["sender.email", "sender.nickname", "sender.profileImage", "content"],
        ChatEvents.DirectMessageCreated.eventType: ["sender.email", "sender.nickname", "sender.profileImage", "content"],
        ChatEvents.MessageEdited.eventType: ["content"],
        GatewayEvents.SessionOpened.eventType: ["device"],
        StudyEvents.RequestSent.eventType: ["fromNick"],
        StudyEvents.Matched.eventType: ["acceptorNick", "requesterNick"],
        StudyEvents.Dodged.eventType: ["nick"],
        StudyEvents.ChatSent.eventType: ["fromNick", "chat"],
        StudyEvents.UserTokenChanged.eventType: ["fcmToken"],
    ]

    /// The topics whose events carry any of `fields` (for the retention and PII notes).
    public static var topics: [Topic] {
        let types = Set(fields.keys)
        return Topic.catalog.filter { topic in
            EventCatalog.payloadTypes.contains { $0.topic == topic && types.contains($0.eventType) }
        }
    }
}
