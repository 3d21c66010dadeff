import Events
import Foundation
import Logging
import PostgresNIO

/// SQL of study users.
struct StudyUserStore: Sendable {
    let logger: Logger

    static let columns = """
        uid, object_id, phone_number, email, fcm_token, nick, birth, gender, study, comment, reputation, sesac, sesac_collection, background,
        background_collection, purchase_token, transaction_id, reviewed_before, reported_num, reported_user, dodge_penalty, dodge_num, age_min,
        age_max, searchable, created_at
        """

    private func users(_ rows: PostgresRowSequence) async throws -> [StudyUser] {
        var result: [StudyUser] = []
        for try await row in rows {
            let r = row.makeRandomAccess()
            result.append(
                StudyUser(
                    uid: try r[0].decode(String.self), objectId: try r[1].decode(String.self), phoneNumber: try r[2].decode(String.self),
                    email: try r[3].decode(String.self), fcmToken: try r[4].decode(String.self), nick: try r[5].decode(String.self),
                    birth: try r[6].decode(Date.self), gender: Int(try r[7].decode(Int16.self)), study: try r[8].decode(String.self),
                    comment: try r[9].decode([String].self), reputation: try r[10].decode([Int32].self).map(Int.init),
                    sesac: Int(try r[11].decode(Int32.self)), sesacCollection: try r[12].decode([Int32].self).map(Int.init),
                    background: Int(try r[13].decode(Int32.self)), backgroundCollection: try r[14].decode([Int32].self).map(Int.init),
                    purchaseToken: try r[15].decode([String].self), transactionId: try r[16].decode([String].self),
                    reviewedBefore: try r[17].decode([String].self), reportedNum: Int(try r[18].decode(Int32.self)),
                    reportedUser: try r[19].decode([String].self), dodgePenalty: try r[20].decode(Int64.self), dodgeNum: Int(try r[21].decode(Int32.self)),
                    ageMin: Int(try r[22].decode(Int32.self)), ageMax: Int(try r[23].decode(Int32.self)), searchable: Int(try r[24].decode(Int16.self)),
                    createdAt: try r[25].decode(Date.self)))
        }
        return result
    }

    func find(_ uid: String, _ c: PostgresConnection) async throws -> StudyUser? {
        try await users(c.query("SELECT \(unescaped: Self.columns) FROM users WHERE uid = \(uid)", logger: logger)).first
    }

    /// Registers a user; nil when the uid is registered already (the primary key decides races).
    /// `birth` goes in as whole milliseconds: a bound `Date` is truncated to the microsecond by
    /// the driver, which would give some dates back a millisecond early.
    func insert(_ signUp: StudySignUp, uid: String, objectId: String, _ c: PostgresConnection) async throws -> StudyUser? {
        try await users(
            c.query(
                """
                INSERT INTO users (uid, object_id, phone_number, email, fcm_token, nick, birth, gender)
                VALUES (\(uid), \(objectId), \(signUp.phoneNumber), \(signUp.email), \(signUp.fcmToken), \(signUp.nick),
                        timestamptz '1970-01-01 00:00:00+00' + \(Timestamp.milliseconds(signUp.birth)) * interval '1 millisecond',
                        \(Int16(signUp.gender)))
                ON CONFLICT (uid) DO NOTHING
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    /// Deletes the user; false when there was none.
    func delete(_ uid: String, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query("DELETE FROM users WHERE uid = \(uid) RETURNING 1", logger: logger) { return true }
        return false
    }

    /// The search preferences of `PUT /v1/user/mypage`; false when the user is not registered.
    func updatePreferences(_ uid: String, _ p: StudyPreferences, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            UPDATE users SET searchable = \(Int16(p.searchable)), age_min = \(Int32(p.ageMin)), age_max = \(Int32(p.ageMax)),
                gender = \(Int16(p.gender)), study = \(p.study)
            WHERE uid = \(uid) RETURNING 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// false when the user is not registered.
    func updateFCMToken(_ uid: String, _ token: String, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query("UPDATE users SET fcm_token = \(token) WHERE uid = \(uid) RETURNING 1", logger: logger) { return true }
        return false
    }
}
