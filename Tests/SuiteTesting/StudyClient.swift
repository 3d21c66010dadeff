import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A study-app user of a test (client contract §3): a Firebase uid and an ID token for it.
public struct StudyPerson: Sendable {
    public let uid: String
    public let token: String
    public let nick: String

    public init(uid: String, token: String, nick: String) {
        self.uid = uid
        self.token = token
        self.nick = nick
    }
}

/// The study app's requests as the app sends them: the `idtoken` header, form-urlencoded bodies
/// with repeated keys (or JSON), answers as bare status codes.
extension Stack {
    /// Near 문래 in Seoul, where the original app's users met.
    public static let studyLat = 37.517819
    public static let studyLong = 126.886480

    public func study(_ method: HTTPRequest.Method, _ path: String, token: String?, form: String? = nil, json: String? = nil) async throws
        -> TestResponse
    {
        var headers = HTTPFields()
        if let token { headers[HTTPField.Name("idtoken")!] = token }
        if form != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        if json != nil { headers[.contentType] = "application/json" }
        return try await client.execute(uri: path, method: method, headers: headers, body: (form ?? json).map { ByteBuffer(string: $0) })
    }

    /// `POST /v1/user`'s form (`birth` on 2 January of `birth`).
    public static func studySignUpForm(nick: String = "새싹", gender: String = "1", fcm: String = "fcm-token-1", birth: String = "1994") -> String {
        "phoneNumber=%2B821012345678&FCMtoken=\(fcm)&nick=\(nick.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
            + "&birth=\(birth)-01-02T00%3A00%3A00.000Z&email=sesac%40example.com&gender=\(gender)"
    }

    /// Signs up a new study user (a fresh uid) with `key`'s ID token for `project`.
    public func studyUser(
        _ key: FakeKeySet.Key, project: String, nick: String, gender: String = "1", birth: String = "1994", fcm: String = "fcm-token-1"
    ) async throws -> StudyPerson {
        let uid = "uid-\(UUID().uuidString.prefix(12))"
        let token = try await key.token(uid: uid, project: project)
        let created = try await study(.post, "/v1/user", token: token, form: Self.studySignUpForm(nick: nick, gender: gender, fcm: fcm, birth: birth))
        try #require(created.status.code == 200)
        return StudyPerson(uid: uid, token: token, nick: nick)
    }

    /// Starts searching at the study point (`dLat` degrees north of it).
    public func studyQueue(_ who: StudyPerson, dLat: Double = 0, studies: [String] = ["anything"]) async throws -> Int {
        let list = studies.map { "studylist=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        let form = "lat=\(Self.studyLat + dLat)&long=\(Self.studyLong)&\(list)"
        return Int(try await study(.post, "/v1/queue", token: who.token, form: form).status.code)
    }

    /// `a` and `b` search, `a` asks `b`, `b` accepts: the two are matched.
    public func studyMatch(_ a: StudyPerson, _ b: StudyPerson) async throws {
        try #require(try await studyQueue(a) == 200)
        try #require(try await studyQueue(b) == 200)
        try #require(try await study(.post, "/v1/queue/studyrequest", token: a.token, form: "otheruid=\(b.uid)").status.code == 200)
        try #require(try await study(.post, "/v1/queue/studyaccept", token: b.token, form: "otheruid=\(a.uid)").status.code == 200)
    }
}
