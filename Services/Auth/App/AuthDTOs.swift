import Events
import Foundation
import Hummingbird

// Response shapes of the client contract §1.1: snake_case ids, camelCase everything else,
// dates as yyyy-MM-ddTHH:mm:ss.SSSZ (the suite's encoder). Optional fields are omitted when nil.

struct TokenPair: Codable, Sendable {
    var accessToken: String
    var refreshToken: String
}

/// A join or login: the account and its new tokens (each API generation shapes it its own way).
struct SignedIn: Sendable {
    var user: UserRecord
    var token: TokenPair
}

/// Every user-shaped response of the contract from one type; fields left nil are omitted, so each
/// factory yields exactly its contract shape (and a member summary cannot leak a phone number).
struct UserResponse: ResponseEncodable, Sendable {
    var user_id: UserID
    var email: String
    var nickname: String
    var profileImage: String?
    var phone: String?
    var provider: String?
    var sesacCoin: Int?
    var createdAt: Date?
    var token: TokenPair?

    private init(_ user: UserRecord, details: Bool) {
        user_id = user.id
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
        if details {
            phone = user.phone
            provider = user.provider
            createdAt = user.createdAt
        }
    }

    /// Join and every login: the user plus a token pair.
    static func authResult(_ signedIn: SignedIn) -> Self {
        var r = Self(signedIn.user, details: true)
        r.token = signedIn.token
        return r
    }

    /// `GET /users/me`.
    static func myProfile(_ user: UserRecord, coins: Int) -> Self {
        var r = Self(user, details: true)
        r.sesacCoin = coins
        return r
    }

    /// `PUT /users/me` (and the image upload): the profile without `sesacCoin`.
    static func editedProfile(_ user: UserRecord) -> Self { Self(user, details: true) }

    /// `GET /users/{id}`: `{user_id, email, nickname, profileImage?}`.
    static func member(_ user: UserRecord) -> Self { Self(user, details: false) }
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

struct AppleLoginBody: Decodable {
    var idToken: String?
    var nickname: String?
    var deviceToken: String?
}

struct KakaoLoginBody: Decodable {
    var oauthToken: String?
    var deviceToken: String?
}
