import Foundation
import Logging
import PostgresNIO

/// A user row as the queue's rules need it, read with its lock held.
struct StudyLockedUser: Sendable {
    var uid: String
    var nick: String
    var gender: Int
    var reportedNum: Int
    var reportedUser: [String]
    var dodgeNum: Int
    /// When the dodge penalty ends, in milliseconds since 1970 (0: none).
    var dodgePenalty: Int64
}

/// A user's row in the queue.
struct StudyQueueEntry: Sendable, Equatable {
    var uid: String
    var matchedUid: String?
    var matchedNick: String?
    var dodged: Bool
    var reviewed: Bool

    /// Still searching (not matched).
    var isSearching: Bool { matchedUid == nil }
    /// Matched, and neither side cancelled nor this side rated: the user may not leave.
    var isStudying: Bool { matchedUid != nil && !dodged && !reviewed }
}

/// Somebody in the queue as `POST /v1/queue/search` shows them, every key present (clients decode
/// them as non-optional). `type` is always 0: clients decode it but none reads it, and the
/// original's meaning is unknown.
struct StudyQueuedUser: Sendable, Equatable, Encodable {
    var uid: String
    var nick: String
    var lat: Double
    var long: Double
    var reputation: [Int]
    var studylist: [String]
    var reviews: [String]
    var gender: Int
    var sesac: Int
    var background: Int

    enum CodingKeys: String, CodingKey { case uid, nick, lat, long, reputation, studylist, reviews, gender, type, sesac, background }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(uid, forKey: .uid)
        try c.encode(nick, forKey: .nick)
        try c.encode(lat, forKey: .lat)
        try c.encode(long, forKey: .long)
        try c.encode(reputation, forKey: .reputation)
        try c.encode(studylist, forKey: .studylist)
        try c.encode(reviews, forKey: .reviews)
        try c.encode(gender, forKey: .gender)
        try c.encode(0, forKey: .type)
        try c.encode(sesac, forKey: .sesac)
        try c.encode(background, forKey: .background)
    }
}

/// SQL of the matching queue. Its callers hold the users-row locks of everyone whose queue row
/// they change (`lockUsers`), which is what makes the rules race-free.
struct StudyQueueStore: Sendable {
    let logger: Logger

    /// Locks the users rows of `uids` in uid order (one order for every caller: no deadlocks)
    /// and reads them; an unregistered uid is absent from the answer.
    func lockUsers(_ uids: [String], _ c: PostgresConnection) async throws -> [String: StudyLockedUser] {
        var users: [String: StudyLockedUser] = [:]
        let rows = try await c.query(
            """
            SELECT uid, nick, gender, reported_num, reported_user, dodge_num, dodge_penalty FROM users
            WHERE uid = ANY(\(Array(Set(uids)))) ORDER BY uid FOR UPDATE
            """, logger: logger)
        for try await (uid, nick, gender, reportedNum, reportedUser, dodgeNum, dodgePenalty) in rows.decode(
            (String, String, Int16, Int32, [String], Int32, Int64).self)
        {
            users[uid] = StudyLockedUser(
                uid: uid, nick: nick, gender: Int(gender), reportedNum: Int(reportedNum), reportedUser: reportedUser, dodgeNum: Int(dodgeNum),
                dodgePenalty: dodgePenalty)
        }
        return users
    }

    func entries(_ uids: [String], _ c: PostgresConnection) async throws -> [String: StudyQueueEntry] {
        var entries: [String: StudyQueueEntry] = [:]
        let rows = try await c.query(
            "SELECT uid, matched_uid, matched_nick, dodged, reviewed FROM queue WHERE uid = ANY(\(uids))", logger: logger)
        for try await (uid, matchedUid, matchedNick, dodged, reviewed) in rows.decode((String, String?, String?, Bool, Bool).self) {
            entries[uid] = StudyQueueEntry(uid: uid, matchedUid: matchedUid, matchedNick: matchedNick, dodged: dodged, reviewed: reviewed)
        }
        return entries
    }

    func entry(_ uid: String, _ c: PostgresConnection) async throws -> StudyQueueEntry? {
        try await entries([uid], c)[uid]
    }

    /// Replaces the user's row (and so their requests) with a new, searching one.
    func enqueue(_ uid: String, lat: Double, long: Double, studylist: [String], _ c: PostgresConnection) async throws {
        try await c.query("DELETE FROM queue WHERE uid = \(uid)", logger: logger)
        try await c.query(
            """
            INSERT INTO queue (uid, lat, long, location, studylist)
            VALUES (\(uid), \(lat), \(long), ll_to_earth(\(lat), \(long)), \(studylist))
            """, logger: logger)
    }

    func dequeue(_ uid: String, _ c: PostgresConnection) async throws {
        try await c.query("DELETE FROM queue WHERE uid = \(uid)", logger: logger)
    }

    func hasRequest(from: String, to: String, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query("SELECT 1 FROM study_requests WHERE from_uid = \(from) AND to_uid = \(to)", logger: logger) {
            return true
        }
        return false
    }

    /// false when the request was open already.
    func addRequest(from: String, to: String, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            "INSERT INTO study_requests (from_uid, to_uid) VALUES (\(from), \(to)) ON CONFLICT DO NOTHING RETURNING 1", logger: logger)
        {
            return true
        }
        return false
    }

    /// Matches two searching users and drops every request either of them sent or received.
    func match(_ a: StudyLockedUser, _ b: StudyLockedUser, _ c: PostgresConnection) async throws {
        try await c.query(
            """
            UPDATE queue SET matched_uid = CASE WHEN uid = \(a.uid) THEN \(b.uid) ELSE \(a.uid) END,
                matched_nick = CASE WHEN uid = \(a.uid) THEN \(b.nick) ELSE \(a.nick) END,
                matched_at = date_trunc('milliseconds', clock_timestamp()), dodged = false, reviewed = false
            WHERE uid IN (\(a.uid), \(b.uid))
            """, logger: logger)
        try await c.query(
            """
            DELETE FROM study_requests WHERE from_uid IN (\(a.uid), \(b.uid)) OR to_uid IN (\(a.uid), \(b.uid))
            """, logger: logger)
    }

    /// Marks the study of `uid` and `partner` cancelled on both rows that still name each other.
    func markDodged(_ uid: String, partner: String, _ c: PostgresConnection) async throws {
        try await c.query(
            """
            UPDATE queue SET dodged = true
            WHERE (uid = \(uid) AND matched_uid = \(partner)) OR (uid = \(partner) AND matched_uid = \(uid))
            """, logger: logger)
    }

    /// Counts a dodge: the penalty lasts `unit` × the dodge count (at most 3) from now.
    func penalize(_ uid: String, unitMilliseconds: Int64, _ c: PostgresConnection) async throws {
        try await c.query(
            """
            UPDATE users SET dodge_num = dodge_num + 1,
                dodge_penalty = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + least(dodge_num + 1, 3) * \(unitMilliseconds)
            WHERE uid = \(uid)
            """, logger: logger)
    }

    /// The current time in the penalty's unit (milliseconds since 1970), by the database's clock.
    func nowMilliseconds(_ c: PostgresConnection) async throws -> Int64 {
        for try await now in try await c.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", logger: logger).decode(
            Int64.self)
        {
            return now
        }
        return 0
    }

    /// `uid` rates `other`: the votes add up per category, a comment joins the other's reviews,
    /// `other` joins the rater's `reviewedBefore`, and the rater's row is marked reviewed.
    func rate(_ uid: String, other: String, reputation: [Int], comment: String, _ c: PostgresConnection) async throws {
        try await c.query(
            """
            UPDATE users SET
                reputation = (SELECT array_agg(coalesce(old, 0) + coalesce(vote, 0) ORDER BY i)
                              FROM unnest(reputation, \(reputation.map(Int32.init))::integer[]) WITH ORDINALITY AS v(old, vote, i)),
                comment = CASE WHEN \(comment) = '' THEN comment ELSE array_append(comment, \(comment)) END
            WHERE uid = \(other)
            """, logger: logger)
        try await c.query(
            """
            UPDATE users SET reviewed_before = array_append(reviewed_before, \(other))
            WHERE uid = \(uid) AND NOT \(other) = ANY(reviewed_before)
            """, logger: logger)
        try await c.query("UPDATE queue SET reviewed = true WHERE uid = \(uid)", logger: logger)
    }

    /// `uid` reports `other` (once: the caller checked `reportedUser`).
    func report(_ uid: String, other: String, _ c: PostgresConnection) async throws {
        try await c.query(
            "UPDATE users SET reported_num = reported_num + 1, reported_user = array_append(reported_user, \(uid)) WHERE uid = \(other)",
            logger: logger)
    }

    /// Searching users within `radius` meters of a point, nearest first, whose age is within
    /// the caller's range; without the caller and without those who asked the caller already.
    func searching(
        near lat: Double, _ long: Double, radius: Double, for caller: StudyUser, limit: Int, _ c: PostgresConnection
    ) async throws -> [StudyQueuedUser] {
        try await queued(
            c.query(
                """
                SELECT q.uid, u.nick, q.lat, q.long, u.reputation, q.studylist, u.comment, u.gender, u.sesac, u.background
                FROM queue q JOIN users u ON u.uid = q.uid
                WHERE q.matched_uid IS NULL
                  AND earth_box(ll_to_earth(\(lat), \(long)), \(radius)) @> q.location
                  AND earth_distance(ll_to_earth(\(lat), \(long)), q.location) <= \(radius)
                  AND q.uid <> \(caller.uid)
                  AND NOT EXISTS (SELECT 1 FROM study_requests r WHERE r.from_uid = q.uid AND r.to_uid = \(caller.uid))
                  AND u.birth <= now() - make_interval(years => \(Int32(caller.ageMin)))
                  AND u.birth > now() - make_interval(years => \(Int32(caller.ageMax + 1)))
                ORDER BY earth_distance(ll_to_earth(\(lat), \(long)), q.location), q.uid
                LIMIT \(Int32(limit))
                """, logger: logger))
    }

    /// Searching users who asked `uid` to study, oldest request first.
    func requesters(of uid: String, limit: Int, _ c: PostgresConnection) async throws -> [StudyQueuedUser] {
        try await queued(
            c.query(
                """
                SELECT q.uid, u.nick, q.lat, q.long, u.reputation, q.studylist, u.comment, u.gender, u.sesac, u.background
                FROM study_requests r JOIN queue q ON q.uid = r.from_uid JOIN users u ON u.uid = q.uid
                WHERE r.to_uid = \(uid) AND q.matched_uid IS NULL
                ORDER BY r.created_at, q.uid
                LIMIT \(Int32(limit))
                """, logger: logger))
    }

    private func queued(_ rows: PostgresRowSequence) async throws -> [StudyQueuedUser] {
        var result: [StudyQueuedUser] = []
        for try await (uid, nick, lat, long, reputation, studylist, reviews, gender, sesac, background) in rows.decode(
            (String, String, Double, Double, [Int32], [String], [String], Int16, Int32, Int32).self)
        {
            result.append(
                StudyQueuedUser(
                    uid: uid, nick: nick, lat: lat, long: long, reputation: reputation.map(Int.init), studylist: studylist, reviews: reviews,
                    gender: Int(gender), sesac: Int(sesac), background: Int(background)))
        }
        return result
    }
}
