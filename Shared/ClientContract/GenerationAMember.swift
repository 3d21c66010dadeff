import Hummingbird

/// A user as Gen A of the SeSAC workspace API shows them (Lilac's `Member`, client contract
/// §1.9): `MemberSummary` with the user's integer alias for `user_id`. 0 for a user whose alias
/// no event has brought yet.
public struct GenerationAMember: ResponseEncodable, Sendable, Equatable {
    public var user_id: Int64
    public var email: String
    public var nickname: String
    public var profileImage: String?

    public init(_ member: MemberSummary, alias: Int64?) {
        user_id = alias ?? 0
        email = member.email
        nickname = member.nickname
        profileImage = member.profileImage
    }
}
