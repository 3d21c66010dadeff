import Foundation
import Hummingbird
import ServiceKit

// Smooth's `/auth-server` shapes (client contract §2.1; its iOS models `SignIn`, `User`,
// `UserInfo`, `Friend`). Ids are integer aliases. A `?` key of the contract is omitted when
// nil; the others are always present (null when empty).

struct SmoothSignUpBody: Decodable {
    var email: String?
    var password: String?
    var name: String?
}

struct SmoothSignInBody: Decodable {
    var email: String?
    var password: String?
    var type: String?
    var deviceToken: String?
}

struct SmoothBioBody: Decodable {
    var bio: String?
}

/// `POST /sign-in`: `{id, name, code, email, accessToken, refreshToken, deviceToken, type, url}`;
/// `deviceToken` and `type` echo the request (null when it had none).
struct SmoothSignIn: Encodable, Sendable {
    var id: Int64
    var name: String
    var code: String
    var email: String
    var accessToken: String
    var refreshToken: String
    @SmoothNull var deviceToken: String?
    @SmoothNull var type: String?
    var url: String
}

/// `GET /auth/info` and the sign-up result: `{id, email, name, code, profileImage?, bio?}`.
struct SmoothAccount: Encodable, Sendable {
    var id: Int64
    var email: String
    var name: String
    var code: String
    var profileImage: String?
    var bio: String?
}

/// `GET /auth/name/{id}`: `{name, code, profileImage, bio}`, the last two null when unset.
struct SmoothUserInfo: Encodable, Sendable {
    var name: String
    var code: String
    @SmoothNull var profileImage: String?
    @SmoothNull var bio: String?
}

/// `GET /auth/friend` items: `{id (the friendship), userId, name, code, profileImage?, state}`.
struct SmoothFriend: Encodable, Sendable {
    var id: Int64
    var userId: Int64
    var name: String
    var code: String
    var profileImage: String?
    var state: String
}
