import Database
import Foundation
import Hummingbird
import NIOCore
import PostgresNIO
import ServiceKit

/// The matching queue's routes (`/v1/queue…`, and `/v1/user/report`): fields are read and
/// checked here (501), the rules are `StudyMatching`'s.
extension StudyAPI {
    /// Searches answer at most this many people per list (nearest first).
    static let searchLimit = 100

    func addQueue(to router: some RouterMethods<SuiteRequestContext>) {
        let queue = router.group("study/v1/queue")
        queue.post { request, _ in await answer { try await start(request) } }
        queue.delete { request, _ in await answer { try await stop(request) } }
        queue.post("search") { request, _ in await answer { try await search(request) } }
        queue.get("myQueueState") { request, _ in await answer { try await myQueueState(request) } }
        queue.post("studyrequest") { request, _ in await answer { try await studyRequest(request) } }
        queue.post("studyaccept") { request, _ in await answer { try await studyAccept(request) } }
        queue.post("dodge") { request, _ in await answer { try await dodge(request) } }
        queue.post("rate/:otheruid") { request, context in await answer { try await rate(request, context) } }
        router.group("study/v1/user").post("report") { request, _ in await answer { try await report(request) } }
    }

    /// A rule's answer: the status, no body.
    private func status(_ body: @Sendable @escaping (PostgresConnection) async throws -> Int) async throws -> Response {
        Response(status: .init(code: try await postgres.withLiveTransaction(logger: logger) { try await body($0) }))
    }

    private func start(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let form = try await StudyForm.read(request)
        let point = try StudyQueueFields.coordinate(form)
        let studylist = try StudyQueueFields.studylist(form)
        return try await status { [matching] in try await matching.start(uid, lat: point.lat, long: point.long, studylist: studylist, $0) }
    }

    private func stop(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        return try await status { [matching] in try await matching.stop(uid, $0) }
    }

    private func otherUid(_ request: Request) async throws -> (uid: String, other: String, form: StudyForm) {
        let uid = try await uid(of: request)
        let form = try await StudyForm.read(request)
        return (uid, try StudyQueueFields.uid(form.string("otheruid")), form)
    }

    private func studyRequest(_ request: Request) async throws -> Response {
        let (uid, other, _) = try await otherUid(request)
        return try await status { [matching] in try await matching.request(uid, to: other, $0) }
    }

    private func studyAccept(_ request: Request) async throws -> Response {
        let (uid, other, _) = try await otherUid(request)
        return try await status { [matching] in try await matching.accept(uid, from: other, $0) }
    }

    private func dodge(_ request: Request) async throws -> Response {
        let (uid, other, _) = try await otherUid(request)
        return try await status { [matching] in try await matching.dodge(uid, partner: other, $0) }
    }

    /// The partner is the path's `otheruid`; a body `otheruid` must name the same user.
    private func rate(_ request: Request, _ context: SuiteRequestContext) async throws -> Response {
        let uid = try await uid(of: request)
        let other = try StudyQueueFields.uid(context.parameters.get("otheruid") ?? "")
        let form = try await StudyForm.read(request)
        if let named = form.strings("otheruid").first, named.trimmingCharacters(in: .whitespaces) != other { throw StudyRefusal.badField }
        let reputation = try StudyQueueFields.reputation(form)
        let comment = try StudyQueueFields.comment(form)
        return try await status { [matching] in try await matching.rate(uid, partner: other, reputation: reputation, comment: comment, $0) }
    }

    /// `POST /v1/user/report` (`otheruid`, optional `reportedReputation` and `comment`).
    private func report(_ request: Request) async throws -> Response {
        let (uid, other, form) = try await otherUid(request)
        if !form.strings("reportedReputation").isEmpty { _ = try StudyQueueFields.reputation(form, key: "reportedReputation") }
        if !form.strings("comment").isEmpty { _ = try StudyQueueFields.comment(form) }
        return try await status { [matching] in try await matching.report(uid, other: other, $0) }
    }

    /// `GET /v1/queue/myQueueState`: 200 `{dodged, matched, reviewed, matchedNick?, matchedUid?}`
    /// (0/1 flags, the partner only once matched); 201 not in the queue; 406.
    private func myQueueState(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let (registered, entry) = try await postgres.withLiveConnection { [users, queueStore] c in
            (try await users.find(uid, c) != nil, try await queueStore.entry(uid, c))
        }
        guard registered else { throw StudyRefusal.notRegistered }
        guard let entry else { throw StudyRefusal.code(201) }
        return try json(StudyQueueStateResponse(entry))
    }

    /// `POST /v1/queue/search` (`lat`, `long`): who is searching within the radius, who asked
    /// the caller, and the recommended studies; 406.
    private func search(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let point = try StudyQueueFields.coordinate(try await StudyForm.read(request))
        let radius = Double(searchRadiusMeters)
        let found = try await postgres.withLiveConnection { [users, queueStore] c -> (near: [StudyQueuedUser], requested: [StudyQueuedUser])? in
            guard let me = try await users.find(uid, c) else { return nil }
            let near = try await queueStore.searching(near: point.lat, point.long, radius: radius, for: me, limit: Self.searchLimit, c)
            let requested = try await queueStore.requesters(of: uid, limit: Self.searchLimit, c)
            return (near, requested)
        }
        guard let found else { throw StudyRefusal.notRegistered }
        return try json(
            StudySearchResponse(
                fromQueueDB: found.near, fromQueueDBRequested: found.requested,
                fromRecommend: recommendedStudies))
    }

    func json(_ value: some Encodable) throws -> Response {
        let body = try JSONEncoder().encode(value)
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// `myQueueState`'s answer: flags as 0/1; `matchedNick` and `matchedUid` only once matched.
struct StudyQueueStateResponse: Encodable {
    var dodged: Int
    var matched: Int
    var reviewed: Int
    var matchedNick: String?
    var matchedUid: String?

    init(_ entry: StudyQueueEntry) {
        dodged = entry.dodged ? 1 : 0
        matched = entry.matchedUid == nil ? 0 : 1
        reviewed = entry.reviewed ? 1 : 0
        matchedNick = entry.matchedNick
        matchedUid = entry.matchedUid
    }
}

struct StudySearchResponse: Encodable {
    var fromQueueDB: [StudyQueuedUser]
    var fromQueueDBRequested: [StudyQueuedUser]
    var fromRecommend: [String]
}
