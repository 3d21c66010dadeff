import Foundation
import Hummingbird

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
    var deviceToken: String?
    var type: String?
    var url: String

    enum CodingKeys: String, CodingKey { case id, name, code, email, accessToken, refreshToken, deviceToken, type, url }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(code, forKey: .code)
        try c.encode(email, forKey: .email)
        try c.encode(accessToken, forKey: .accessToken)
        try c.encode(refreshToken, forKey: .refreshToken)
        try c.encode(deviceToken, forKey: .deviceToken)
        try c.encode(type, forKey: .type)
        try c.encode(url, forKey: .url)
    }
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
    var profileImage: String?
    var bio: String?

    enum CodingKeys: String, CodingKey { case name, code, profileImage, bio }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(code, forKey: .code)
        try c.encode(profileImage, forKey: .profileImage)
        try c.encode(bio, forKey: .bio)
    }
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
