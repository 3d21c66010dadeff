import Events
import Foundation
import Hummingbird

// Response shapes of the client contract §1.1: snake_case ids, camelCase everything else,
// dates as yyyy-MM-ddTHH:mm:ss.SSSZ (the suite's encoder). Optional fields are omitted when nil.

struct TokenPair: Codable, Sendable {
    var accessToken: String
    var refreshToken: String
}

/// Join and every login: the user plus a token pair.
struct AuthResult: ResponseEncodable, Sendable {
    var user_id: UserID
    var email: String
    var nickname: String
    var profileImage: String?
    var phone: String?
    var provider: String?
    var createdAt: Date
    var token: TokenPair

    init(_ user: UserRecord, token: TokenPair) {
        user_id = user.id
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
        phone = user.phone
        provider = user.provider
        createdAt = user.createdAt
        self.token = token
    }
}

/// `GET /users/me`.
struct MyProfile: ResponseEncodable, Sendable {
    var user_id: UserID
    var email: String
    var nickname: String
    var profileImage: String?
    var phone: String?
    var provider: String?
    var sesacCoin: Int
    var createdAt: Date

    init(_ user: UserRecord, coins: Int) {
        user_id = user.id
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
        phone = user.phone
        provider = user.provider
        sesacCoin = coins
        createdAt = user.createdAt
    }
}

/// `PUT /users/me` and `PUT /users/me/image`: the profile without `sesacCoin`.
struct EditedProfile: ResponseEncodable, Sendable {
    var user_id: UserID
    var email: String
    var nickname: String
    var profileImage: String?
    var phone: String?
    var provider: String?
    var createdAt: Date

    init(_ user: UserRecord) {
        user_id = user.id
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
        phone = user.phone
        provider = user.provider
        createdAt = user.createdAt
    }
}

/// `GET /users/{id}`: a member summary.
struct MemberSummary: ResponseEncodable, Sendable {
    var user_id: UserID
    var email: String
    var nickname: String
    var profileImage: String?

    init(_ user: UserRecord) {
        user_id = user.id
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
    }
}

struct AccessTokenResponse: ResponseEncodable, Sendable {
    var accessToken: String
}

// Request bodies (JSON or form-urlencoded).

struct EmailBody: Decodable { var email: String? }

struct JoinBody: Decodable {
    var email: String?
    var password: String?
    var nickname: String?
    var phone: String?
    var deviceToken: String?
}

struct LoginBody: Decodable {
    var email: String?
    var password: String?
    var deviceToken: String?
}

struct ProfileBody: Decodable {
    var nickname: String?
    var phone: String?
}

struct DeviceTokenBody: Decodable { var deviceToken: String? }
