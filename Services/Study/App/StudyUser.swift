import Events
import Foundation

/// A registered user of the study app, as stored.
struct StudyUser: Sendable, Equatable {
    var uid: String
    var objectId: String
    var phoneNumber: String
    var email: String
    var fcmToken: String
    var nick: String
    var birth: Date
    var gender: Int
    var study: String
    var comment: [String]
    var reputation: [Int]
    var sesac: Int
    var sesacCollection: [Int]
    var background: Int
    var backgroundCollection: [Int]
    var purchaseToken: [String]
    var transactionId: [String]
    var reviewedBefore: [String]
    var reportedNum: Int
    var reportedUser: [String]
    var dodgePenalty: Int64
    var dodgeNum: Int
    var ageMin: Int
    var ageMax: Int
    var searchable: Int
    var createdAt: Date
}

/// The User object of login and `shop/myinfo` (client contract §3.1): every key always present,
/// in the original server's names (`_id`, `__v`, `FCMtoken`, `dodgepenalty`…), because clients
/// decode them as non-optional.
struct StudyUserResponse: Encodable, Sendable {
    let user: StudyUser

    init(_ user: StudyUser) { self.user = user }

    enum CodingKeys: String, CodingKey {
        case _id, __v, uid, phoneNumber, email, FCMtoken, nick, birth, gender, study, comment, reputation, sesac, sesacCollection, background,
            backgroundCollection, purchaseToken, transactionId, reviewedBefore, reportedNum, reportedUser, dodgepenalty, dodgeNum, ageMin, ageMax,
            searchable, createdAt
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user.objectId, forKey: ._id)
        try c.encode(0, forKey: .__v)
        try c.encode(user.uid, forKey: .uid)
        try c.encode(user.phoneNumber, forKey: .phoneNumber)
        try c.encode(user.email, forKey: .email)
        try c.encode(user.fcmToken, forKey: .FCMtoken)
        try c.encode(user.nick, forKey: .nick)
        try c.encode(Timestamp.format(user.birth), forKey: .birth)
        try c.encode(user.gender, forKey: .gender)
        try c.encode(user.study, forKey: .study)
        try c.encode(user.comment, forKey: .comment)
        try c.encode(user.reputation, forKey: .reputation)
        try c.encode(user.sesac, forKey: .sesac)
        try c.encode(user.sesacCollection, forKey: .sesacCollection)
        try c.encode(user.background, forKey: .background)
        try c.encode(user.backgroundCollection, forKey: .backgroundCollection)
        try c.encode(user.purchaseToken, forKey: .purchaseToken)
        try c.encode(user.transactionId, forKey: .transactionId)
        try c.encode(user.reviewedBefore, forKey: .reviewedBefore)
        try c.encode(user.reportedNum, forKey: .reportedNum)
        try c.encode(user.reportedUser, forKey: .reportedUser)
        try c.encode(user.dodgePenalty, forKey: .dodgepenalty)
        try c.encode(user.dodgeNum, forKey: .dodgeNum)
        try c.encode(user.ageMin, forKey: .ageMin)
        try c.encode(user.ageMax, forKey: .ageMax)
        try c.encode(user.searchable, forKey: .searchable)
        try c.encode(Timestamp.format(user.createdAt), forKey: .createdAt)
    }
}
