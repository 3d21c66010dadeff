import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// The matching queue's rules (client contract §3.1, docs/study-api.md). Each operation runs in
/// one transaction that first locks the users rows of everyone whose state it changes, in uid
/// order, so concurrent requests serialize per user and cannot deadlock: two users accepting each
/// other at once, or three racing for one, make exactly one match. Operations answer the
/// contract's status code; events for notifications go to the outbox in the same transaction.
struct StudyMatching: Sendable {
    let store: StudyQueueStore
    /// The dodge penalty per dodge (1, 2, then 3 units): a minute in the original app.
    let penaltyUnitMilliseconds: Int64
    let logger: Logger

    static let source = "study"
    /// Reports after which a user may not search any more (201).
    static let reportLimit = 3

    /// `POST /v1/queue`: 200 searching; 201 reported 3+ times; 203/204/205 a dodge penalty
    /// (first/second/third or later dodge) still running; 206 gender unset; 406.
    func start(_ uid: String, lat: Double, long: Double, studylist: [String], _ c: PostgresConnection) async throws -> Int {
        guard let me = try await store.lockUsers([uid], c)[uid] else { return 406 }
        if me.reportedNum >= Self.reportLimit { return 201 }
        if me.dodgePenalty > (try await store.nowMilliseconds(c)) { return 202 + min(max(me.dodgeNum, 1), 3) }
        if me.gender == -1 { return 206 }
        // A study under way is not thrown away by a stray start: the app re-reads its state.
        if let entry = try await store.entry(uid, c), entry.isStudying { return 200 }
        try await store.enqueue(uid, lat: lat, long: long, studylist: studylist, c)
        return 200
    }

    /// `DELETE /v1/queue`: 200 not searching any more (also when not queued); 201 matched (the
    /// study goes on until dodged or rated); 406.
    func stop(_ uid: String, _ c: PostgresConnection) async throws -> Int {
        guard try await store.lockUsers([uid], c)[uid] != nil else { return 406 }
        if let entry = try await store.entry(uid, c), entry.isStudying { return 201 }
        try await store.dequeue(uid, c)
        return 200
    }

    /// `POST /v1/queue/studyrequest`: 200 sent; 201 the other asked first (the app accepts
    /// next); 202 either side is not searching; 406; 501 asking oneself.
    func request(_ uid: String, to other: String, _ c: PostgresConnection) async throws -> Int {
        guard other != uid else { return 501 }
        let (users, entries) = try await lockPair(uid, other, c)
        guard let me = users[uid] else { return 406 }
        guard users[other] != nil, entries[other]?.isSearching == true, entries[uid]?.isSearching == true else { return 202 }
        if try await store.hasRequest(from: other, to: uid, c) { return 201 }
        if try await store.addRequest(from: uid, to: other, c) {
            try await Outbox.append(
                CloudEvent(source: Self.source, data: StudyEvents.RequestSent(fromUid: uid, fromNick: me.nick, toUid: other)), on: c,
                logger: logger)
        }
        return 200
    }

    /// `POST /v1/queue/studyaccept`: 200 matched; 201 the other is matched already; 202 the
    /// other stopped searching (or is not asking); 203 the caller is matched already; 406.
    func accept(_ uid: String, from other: String, _ c: PostgresConnection) async throws -> Int {
        guard other != uid else { return 501 }
        let (users, entries) = try await lockPair(uid, other, c)
        guard let me = users[uid] else { return 406 }
        if let mine = entries[uid], !mine.isSearching { return 203 }
        guard let requester = users[other], let theirs = entries[other] else { return 202 }
        if !theirs.isSearching { return 201 }
        // Matching needs both searching and the other's request: nobody is matched unasked.
        guard entries[uid] != nil, try await store.hasRequest(from: other, to: uid, c) else { return 202 }
        try await store.match(me, requester, c)
        try await Outbox.append(
            CloudEvent(
                source: Self.source,
                data: StudyEvents.Matched(acceptorUid: uid, acceptorNick: me.nick, requesterUid: other, requesterNick: requester.nick)),
            on: c, logger: logger)
        return 200
    }

    /// Locks both users (in uid order) and reads both queue rows.
    private func lockPair(_ uid: String, _ other: String, _ c: PostgresConnection) async throws -> (
        users: [String: StudyLockedUser], entries: [String: StudyQueueEntry]
    ) {
        let users = try await store.lockUsers([uid, other], c)
        return (users, try await store.entries([uid, other], c))
    }

    /// `POST /v1/queue/dodge`: 200 the study is cancelled for both, and the caller's dodge count
    /// and penalty grow; 201 `otheruid` is not the caller's partner (or the study is cancelled
    /// already); 406.
    func dodge(_ uid: String, partner other: String, _ c: PostgresConnection) async throws -> Int {
        let users = try await store.lockUsers([uid, other], c)
        guard let me = users[uid] else { return 406 }
        guard let mine = try await store.entry(uid, c), mine.matchedUid == other, !mine.dodged else { return 201 }
        try await store.markDodged(uid, partner: other, c)
        try await store.penalize(uid, unitMilliseconds: penaltyUnitMilliseconds, c)
        try await Outbox.append(
            CloudEvent(source: Self.source, data: StudyEvents.Dodged(uid: uid, nick: me.nick, partnerUid: other, dodgeNum: me.dodgeNum + 1)),
            on: c, logger: logger)
        return 200
    }

    /// `POST /v1/queue/rate/{otheruid}`: 200 rated; 201 `otheruid` is not the caller's partner,
    /// or rated already; 406.
    func rate(_ uid: String, partner other: String, reputation: [Int], comment: String, _ c: PostgresConnection) async throws -> Int {
        let users = try await store.lockUsers([uid, other], c)
        guard users[uid] != nil else { return 406 }
        guard users[other] != nil, let mine = try await store.entry(uid, c), mine.matchedUid == other, !mine.reviewed else { return 201 }
        try await store.rate(uid, other: other, reputation: reputation, comment: comment, c)
        return 200
    }

    /// `POST /v1/user/report`: 200 reported; 201 `otheruid` is not the caller's (current or
    /// last) partner, or reported by the caller already; 406.
    func report(_ uid: String, other: String, _ c: PostgresConnection) async throws -> Int {
        let users = try await store.lockUsers([uid, other], c)
        guard users[uid] != nil else { return 406 }
        guard let reported = users[other], !reported.reportedUser.contains(uid), let mine = try await store.entry(uid, c),
            mine.matchedUid == other
        else { return 201 }
        try await store.report(uid, other: other, c)
        return 200
    }
}
