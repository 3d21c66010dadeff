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
}
