import Crypto
import Foundation

/// `study.v1`, keyed by the uid of the user the event is for (the one a notification goes to):
/// the study-matching app's queue. Uids are Firebase uids (strings), not suite user ids.
public enum StudyEvents {
    /// A searching user asked another to study with them (`POST /v1/queue/studyrequest`).
    public struct RequestSent: EventPayload {
        public static let eventType = "study.request.sent"
        public static let topic = Topic.study
        public var fromUid: String
        public var fromNick: String
        public var toUid: String
        public var subject: String { toUid }

        public init(fromUid: String, fromNick: String, toUid: String) {
            self.fromUid = fromUid
            self.fromNick = fromNick
            self.toUid = toUid
        }
    }

    /// A user accepted another's request (`POST /v1/queue/studyaccept`): the two study together.
    public struct Matched: EventPayload {
        public static let eventType = "study.matched"
        public static let topic = Topic.study
        public var acceptorUid: String
        public var acceptorNick: String
        public var requesterUid: String
        public var requesterNick: String
        public var subject: String { requesterUid }

        public init(acceptorUid: String, acceptorNick: String, requesterUid: String, requesterNick: String) {
            self.acceptorUid = acceptorUid
            self.acceptorNick = acceptorNick
            self.requesterUid = requesterUid
            self.requesterNick = requesterNick
        }
    }

    /// A user cancelled their study (`POST /v1/queue/dodge`); `dodgeNum` counts their dodges.
    public struct Dodged: EventPayload {
        public static let eventType = "study.dodged"
        public static let topic = Topic.study
        public var uid: String
        public var nick: String
        public var partnerUid: String
        public var dodgeNum: Int
        public var subject: String { partnerUid }

        public init(uid: String, nick: String, partnerUid: String, dodgeNum: Int) {
            self.uid = uid
            self.nick = nick
            self.partnerUid = partnerUid
            self.dodgeNum = dodgeNum
        }
    }

    /// A user's FCM token as the study app registered it (sign-up, `PUT /v1/user/update_fcm_token`);
    /// nil when the user withdrew. `push` keeps the latest per uid to notify the user.
    public struct UserTokenChanged: EventPayload {
        public static let eventType = "study.user.fcm-token-changed"
        public static let topic = Topic.study
        public var uid: String
        public var fcmToken: String?
        public var changedAt: Date
        public var subject: String { uid }

        public init(uid: String, fcmToken: String?, changedAt: Date) {
            self.uid = uid
            self.fcmToken = fcmToken
            self.changedAt = Timestamp.truncated(changedAt)
        }
    }

    /// A study chat (`POST /v1/chat/{to}`), for the recipient: chat-fanout routes it to the
    /// gateways whose Socket.IO sessions announced `to` (`changesocketid`), by `liveRoute(of: to)`.
    public struct ChatSent: EventPayload {
        public static let eventType = "study.chat.sent"
        public static let topic = Topic.study
        /// The chat's `_id` (24 hex digits).
        public var id: String
        public var from: String
        /// The sender's nickname (a notification's title).
        public var fromNick: String
        public var to: String
        public var chat: String
        public var createdAt: Date
        public var subject: String { to }

        public init(id: String, from: String, fromNick: String, to: String, chat: String, createdAt: Date) {
            self.id = id
            self.from = from
            self.fromNick = fromNick
            self.to = to
            self.chat = chat
            self.createdAt = Timestamp.truncated(createdAt)
        }
    }

    /// The id under which gateways follow a study user's live chats and chat-fanout routes them
    /// (interest is kept per UUID): a name-based UUID (version 8) from SHA-256 of the uid, so a
    /// gateway and the fan-out agree without asking anyone, and two uids practically never share one.
    public static func liveRoute(of uid: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Array("chatsuite.study.user:\(uid)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
                bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
