import Events
import Hummingbird

/// The contract's `UserSummary` / `Member` shape (§1.1): `{user_id, email, nickname, profileImage?}`,
/// used in member lists, as a message's `user`, and as the answer of an invitation.
public struct MemberSummary: ResponseEncodable, Sendable, Equatable {
    public var user_id: UserID
    public var email: String
    public var nickname: String
    public var profileImage: String?

    public init(userId: UserID, email: String, nickname: String, profileImage: String?) {
        user_id = userId
        self.email = email
        self.nickname = nickname
        self.profileImage = profileImage
    }
}
