import Events
import Foundation

/// `POST /v1/user`'s fields, checked: a malformed field is 501 (as a missing one), a nickname the
/// app may not use 202.
struct StudySignUp: Sendable {
    var phoneNumber: String
    var fcmToken: String
    var nick: String
    var birth: Date
    var email: String
    var gender: Int

    init(_ form: StudyForm, now: Date = Date()) throws(StudyRefusal) {
        phoneNumber = try StudyFields.phoneNumber(form.string("phoneNumber"))
        fcmToken = try StudyFields.fcmToken(form.string("FCMtoken"))
        let nick = try form.string("nick")
        guard let birth = Timestamp.parse(try form.string("birth").trimmingCharacters(in: .whitespaces)), birth < now else { throw .badField }
        self.birth = birth
        email = try StudyFields.email(form.string("email"))
        gender = try form.int("gender", in: -1...1)
        // Last: every other field is well formed before the nickname decides 202.
        self.nick = try StudyFields.nickname(nick)
    }
}

/// `PUT /v1/user/mypage`: who the user wants to be found by.
struct StudyPreferences: Sendable, Equatable {
    var searchable: Int
    var ageMin: Int
    var ageMax: Int
    var gender: Int
    var study: String

    init(_ form: StudyForm) throws(StudyRefusal) {
        searchable = try form.int("searchable", in: 0...1)
        ageMin = try form.int("ageMin", in: StudyFields.ages)
        ageMax = try form.int("ageMax", in: StudyFields.ages)
        gender = try form.int("gender", in: -1...1)
        let study = try form.string("study").trimmingCharacters(in: .whitespacesAndNewlines)
        guard ageMin <= ageMax, study.count <= StudyFields.maxStudyCharacters, study.utf8.count <= 4 * StudyFields.maxStudyCharacters else {
            throw .badField
        }
        self.study = study
    }
}

/// The rules of the study app's fields (docs/study-api.md).
enum StudyFields {
    /// Ages the app lets a user search for.
    static let ages = 18...65
    static let maxStudyCharacters = 100
    static let maxNickCharacters = 10

    /// E.164 (`+821012345678`), as Firebase phone auth gives it.
    static func phoneNumber(_ value: String) throws(StudyRefusal) -> String {
        let number = value.trimmingCharacters(in: .whitespaces)
        let digits = number.hasPrefix("+") ? number.dropFirst() : Substring(number)
        guard (8...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw .badField }
        return number
    }

    static func fcmToken(_ value: String) throws(StudyRefusal) -> String {
        let token = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty, token.utf8.count <= 4096, !token.contains(where: { $0.isWhitespace }) else { throw .badField }
        return token
    }

    static func email(_ value: String) throws(StudyRefusal) -> String {
        let email = value.trimmingCharacters(in: .whitespaces)
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !email.contains(where: { $0.isWhitespace })
        else { throw .badField }
        return email
    }

    /// 1–10 characters on one line, no control characters: 202 otherwise.
    static func nickname(_ value: String) throws(StudyRefusal) -> String {
        let nick = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...maxNickCharacters).contains(nick.count), nick.utf8.count <= 4 * maxNickCharacters,
            !nick.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format })
        else { throw .code(202) }
        return nick
    }

    /// A 24-hex-digit id like the original server's MongoDB ObjectId: seconds since 1970, then
    /// eight random bytes.
    static func objectId(now: Date = Date()) -> String {
        let seconds = UInt32(clamping: Int64(now.timeIntervalSince1970))
        var bytes = withUnsafeBytes(of: seconds.bigEndian) { Array($0) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<8 { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}
