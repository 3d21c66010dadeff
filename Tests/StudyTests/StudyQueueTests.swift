import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import SuiteTesting
import Testing

/// The study app's matching queue (client contract §3.1) through the gateway: every status
/// code, the radius, and the races the rules must settle with exactly one match.
@Suite("Study matching queue through the gateway")
struct StudyQueueTests {
    typealias T = StudyUserTests
    static let lat = Stack.studyLat
    static let long = Stack.studyLong
    typealias Person = StudyPerson

    static func person(_ s: Stack, _ key: FakeKeySet.Key, nick: String, gender: String = "1", birth: String = "1994") async throws -> Person {
        try await s.studyUser(key, project: T.project, nick: nick, gender: gender, birth: birth)
    }

    static func code(_ s: Stack, _ method: HTTPRequest.Method, _ path: String, _ who: Person, form: String? = nil) async throws -> Int {
        Int(try await T.call(s, method, path, token: who.token, form: form).status.code)
    }

    static func queue(_ s: Stack, _ who: Person, dLat: Double = 0, studies: [String] = ["anything"]) async throws -> Int {
        try await s.studyQueue(who, dLat: dLat, studies: studies)
    }

    static func json(_ s: Stack, _ method: HTTPRequest.Method, _ path: String, _ who: Person, form: String? = nil) async throws -> [String: Any] {
        let response = try await T.call(s, method, path, token: who.token, form: form)
        try #require(response.status.code == 200, "\(path): \(response.status.code)")
        return try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }

    static func search(_ s: Stack, _ who: Person) async throws -> (near: [[String: Any]], requested: [[String: Any]], recommended: [String]) {
        let answer = try await json(s, .post, "/v1/queue/search", who, form: "lat=\(lat)&long=\(long)")
        return (
            try #require(answer["fromQueueDB"] as? [[String: Any]]), try #require(answer["fromQueueDBRequested"] as? [[String: Any]]),
            try #require(answer["fromRecommend"] as? [String])
        )
    }

    static func state(_ s: Stack, _ who: Person) async throws -> [String: Any] {
        try await json(s, .get, "/v1/queue/myQueueState", who)
    }

    static func match(_ s: Stack, _ a: Person, _ b: Person) async throws {
        try await s.studyMatch(a, b)
    }

    @Test("search → request → 201 the other asked first → accept → matched state; stop is 201 while studying; rate; dodge")
    func matchFlow() async throws {
        try await T.withStudy { s, key in
            let a = try await Self.person(s, key, nick: "가나")
            let b = try await Self.person(s, key, nick: "다라", gender: "0")
            let far = try await Self.person(s, key, nick: "먼곳")
            #expect(try await Self.code(s, .get, "/v1/queue/myQueueState", a) == 201, "not queued: 201")
            #expect(try await Self.code(s, .delete, "/v1/queue", a) == 200, "stopping without searching")
            #expect(try await Self.queue(s, a, studies: ["Swift", "알고리즘", "Swift"]) == 200)
            #expect(try await Self.queue(s, b, dLat: 0.003) == 200)
            #expect(try await Self.queue(s, far, dLat: 0.05) == 200)
            let waiting = try await Self.state(s, a)
            #expect(waiting["matched"] as? Int == 0 && waiting["dodged"] as? Int == 0 && waiting["reviewed"] as? Int == 0)
            #expect(waiting["matchedUid"] == nil && waiting["matchedNick"] == nil)

            // A sees B (330 m) but not the far user (5.5 km), nor themself; every key is there.
            let found = try await Self.search(s, a)
            #expect(found.near.map { $0["uid"] as? String } == [b.uid])
            let seen = try #require(found.near.first)
            #expect(
                Set(seen.keys) == ["uid", "nick", "lat", "long", "reputation", "studylist", "reviews", "gender", "type", "sesac", "background"])
            #expect(seen["nick"] as? String == "다라" && seen["gender"] as? Int == 0 && seen["studylist"] as? [String] == ["anything"])
            #expect(seen["reputation"] as? [Int] == Array(repeating: 0, count: 9) && seen["reviews"] as? [String] == [])
            #expect(abs((seen["lat"] as? Double ?? 0) - (Self.lat + 0.003)) < 1e-9)
            #expect(found.requested.isEmpty && found.recommended == ["Swift", "SwiftUI", "알고리즘", "코딩테스트", "CS"])
            let fromB = try await Self.search(s, b)
            #expect(fromB.near.first { $0["uid"] as? String == a.uid }?["studylist"] as? [String] == ["Swift", "알고리즘"])

            // A asks B; B sees the request in its own list; B asking back is 201 (accept next).
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(b.uid)") == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(b.uid)") == 200, "asking twice")
            let asked = try await Self.search(s, b)
            #expect(asked.requested.map { $0["uid"] as? String } == [a.uid] && !asked.near.contains { $0["uid"] as? String == a.uid })
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", b, form: "otheruid=\(a.uid)") == 201)
            #expect(try await Self.code(s, .post, "/v1/queue/studyaccept", b, form: "otheruid=\(a.uid)") == 200)

            for (me, other) in [(a, b), (b, a)] {
                let matched = try await Self.state(s, me)
                #expect(matched["matched"] as? Int == 1 && matched["dodged"] as? Int == 0 && matched["reviewed"] as? Int == 0)
                #expect(matched["matchedUid"] as? String == other.uid && matched["matchedNick"] as? String == other.nick)
            }
            // Matched: nobody finds them, stopping is 201, another accept is 203, starting again keeps the study.
            #expect(try await Self.search(s, far).near.isEmpty)
            #expect(try await Self.code(s, .delete, "/v1/queue", a) == 201)
            #expect(try await Self.code(s, .post, "/v1/queue/studyaccept", a, form: "otheruid=\(far.uid)") == 203)
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", far, form: "otheruid=\(a.uid)") == 202, "A is not searching")
            #expect(try await Self.queue(s, a) == 200)
            #expect(try await Self.state(s, a)["matchedUid"] as? String == b.uid)

            // A rates B (six votes from one client), once; then A may leave.
            let rating = "otheruid=\(b.uid)&reputation=1&reputation=0&reputation=1&reputation=0&reputation=0&reputation=1&comment=%EC%A2%8B%EC%95%84%EC%9A%94"
            #expect(try await Self.code(s, .post, "/v1/queue/rate/\(b.uid)", a, form: rating) == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/rate/\(b.uid)", a, form: rating) == 201, "rated already")
            #expect(try await Self.code(s, .post, "/v1/queue/rate/\(far.uid)", a, form: "reputation=1&comment=") == 201, "not the partner")
            #expect(try await Self.state(s, a)["reviewed"] as? Int == 1)
            let rated = try await Self.json(s, .get, "/v1/user", b)
            #expect(rated["reputation"] as? [Int] == [1, 0, 1, 0, 0, 1, 0, 0, 0] && rated["comment"] as? [String] == ["좋아요"])
            #expect(try await Self.json(s, .get, "/v1/user", a)["reviewedBefore"] as? [String] == [b.uid])

            // B dodges: the study is cancelled for both; B's dodge count and penalty grow.
            #expect(try await Self.code(s, .post, "/v1/queue/dodge", b, form: "otheruid=\(far.uid)") == 201, "not the partner")
            #expect(try await Self.code(s, .post, "/v1/queue/dodge", b, form: "otheruid=\(a.uid)") == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/dodge", b, form: "otheruid=\(a.uid)") == 201, "dodged already")
            let dodgedA = try await Self.state(s, a)
            let dodgedB = try await Self.state(s, b)
            #expect(dodgedA["dodged"] as? Int == 1 && dodgedB["dodged"] as? Int == 1)
            let dodger = try await Self.json(s, .get, "/v1/user", b)
            #expect(dodger["dodgeNum"] as? Int == 1 && (dodger["dodgepenalty"] as? Int ?? 0) > 0)
            #expect(try await Self.queue(s, b) == 203, "first dodge: a one-unit penalty")
            #expect(try await Self.code(s, .delete, "/v1/queue", b) == 200)
            #expect(try await Self.code(s, .get, "/v1/queue/myQueueState", b) == 201)
        }
    }

    @Test("the radius (about 700 m) and the searcher's age range decide who is found")
    func radiusAndAges() async throws {
        try await T.withStudy { s, key in
            let me = try await Self.person(s, key, nick: "나")
            let inside = try await Self.person(s, key, nick: "안", birth: "2000")
            let outside = try await Self.person(s, key, nick: "밖", birth: "2000")
            let older = try await Self.person(s, key, nick: "어른", birth: "1970")
            #expect(try await Self.queue(s, inside, dLat: 0.0055) == 200)  // about 610 m north
            #expect(try await Self.queue(s, outside, dLat: -0.0072) == 200)  // about 800 m south
            #expect(try await Self.queue(s, older, dLat: 0.001) == 200)
            #expect(Set(try await Self.search(s, me).near.compactMap { $0["uid"] as? String }) == [inside.uid, older.uid])
            #expect(try await Self.search(s, me).near.first?["uid"] as? String == older.uid, "nearest first")
            // Searching for 18–40-year-olds leaves out the 1970-born user.
            let mypage = "searchable=1&ageMin=18&ageMax=40&gender=1&study="
            #expect(try await Self.code(s, .put, "/v1/user/mypage", me, form: mypage) == 200)
            #expect(try await Self.search(s, me).near.compactMap { $0["uid"] as? String } == [inside.uid])
            // Stopping takes a user out of everyone's search.
            #expect(try await Self.code(s, .delete, "/v1/queue", inside) == 200)
            #expect(try await Self.search(s, me).near.isEmpty)
        }
    }

    @Test("every refusal: 406 unregistered, 501 fields, 206 gender unset, 202 not searching or not asked, 201 wrong partner, 401")
    func refusals() async throws {
        try await T.withStudy { s, key in
            let a = try await Self.person(s, key, nick: "에이")
            let b = try await Self.person(s, key, nick: "비")
            let unset = try await Self.person(s, key, nick: "미정", gender: "-1")
            let stranger = Person(uid: "uid-nobody", token: try await key.token(uid: "uid-nobody", project: T.project), nick: "")
            let point = "lat=\(Self.lat)&long=\(Self.long)"
            for (method, path, form) in [
                (HTTPRequest.Method.post, "/v1/queue", point + "&studylist=anything"), (.delete, "/v1/queue", nil),
                (.post, "/v1/queue/search", point), (.get, "/v1/queue/myQueueState", nil),
                (.post, "/v1/queue/studyrequest", "otheruid=\(a.uid)"), (.post, "/v1/queue/studyaccept", "otheruid=\(a.uid)"),
                (.post, "/v1/queue/dodge", "otheruid=\(a.uid)"), (.post, "/v1/queue/rate/\(a.uid)", "reputation=1&comment="),
                (.post, "/v1/user/report", "otheruid=\(a.uid)"),
            ] {
                #expect(try await Self.code(s, method, path, stranger, form: form) == 406, "\(method) \(path)")
                #expect(try await T.call(s, method, path, token: nil, form: form).status.code == 401, "\(method) \(path)")
            }
            for form in [
                "long=\(Self.long)&studylist=a", "lat=\(Self.lat)&studylist=a", point, "lat=91&long=0&studylist=a", "lat=x&long=0&studylist=a",
                "lat=nan&long=0&studylist=a", point + "&studylist=", point + (1...9).map { "&studylist=s\($0)" }.joined(),
                point + "&studylist=" + String(repeating: "가", count: 17).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
            ] {
                #expect(try await Self.code(s, .post, "/v1/queue", a, form: form) == 501, "\(form)")
            }
            #expect(try await Self.code(s, .post, "/v1/queue/search", a, form: "lat=1") == 501)
            for path in ["studyrequest", "studyaccept", "dodge"] {
                #expect(try await Self.code(s, .post, "/v1/queue/\(path)", a, form: "") == 501, "\(path)")
                #expect(try await Self.code(s, .post, "/v1/queue/\(path)", a, form: "otheruid=") == 501, "\(path)")
            }
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(a.uid)") == 501, "asking oneself")
            for bad in ["reputation=2&comment=", "comment=x", "reputation=1", (1...10).map { _ in "reputation=1" }.joined(separator: "&") + "&comment="] {
                #expect(try await Self.code(s, .post, "/v1/queue/rate/\(b.uid)", a, form: bad) == 501, "\(bad)")
            }
            #expect(try await Self.code(s, .post, "/v1/queue/rate/\(b.uid)", a, form: "otheruid=\(a.uid)&reputation=1&comment=") == 501)

            #expect(try await Self.queue(s, unset) == 206, "gender unset")
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(b.uid)") == 202, "neither searching")
            #expect(try await Self.queue(s, a) == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(b.uid)") == 202, "B not searching")
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=uid-nobody") == 202, "no such user")
            #expect(try await Self.queue(s, b) == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/studyaccept", a, form: "otheruid=\(b.uid)") == 202, "B never asked")
            #expect(try await Self.code(s, .post, "/v1/queue/dodge", a, form: "otheruid=\(b.uid)") == 201, "not matched")
            #expect(try await Self.code(s, .post, "/v1/queue/rate/\(b.uid)", a, form: "reputation=1&comment=") == 201, "not matched")
            #expect(try await Self.code(s, .post, "/v1/user/report", a, form: "otheruid=\(b.uid)") == 201, "never matched")
            #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", b, form: "otheruid=\(a.uid)") == 200)
            #expect(try await Self.code(s, .delete, "/v1/queue", b) == 200)
            #expect(try await Self.code(s, .post, "/v1/queue/studyaccept", a, form: "otheruid=\(b.uid)") == 202, "B stopped searching")
            #expect(try await Self.search(s, a).requested.isEmpty, "a stopped user's requests are gone")
        }
    }

    @Test("dodge penalties grow 1, 2, 3 units (203, 204, 205) and end; three reports stop a user from searching (201)")
    func penaltiesAndReports() async throws {
        try await T.withStudy(services: ["STUDY_DODGE_PENALTY_SECONDS": "1"]) { s, key in
            let dodger = try await Self.person(s, key, nick: "도망")
            for expected in [203, 204, 205, 205] {
                let partner = try await Self.person(s, key, nick: "짝")
                try await Self.match(s, dodger, partner)
                #expect(try await Self.code(s, .post, "/v1/queue/dodge", dodger, form: "otheruid=\(partner.uid)") == 200)
                let started = ContinuousClock.now
                #expect(try await Self.queue(s, dodger) == expected)
                // The penalty (1, 2, 3, 3 s) ends; polling shows the same code until then.
                var answer = expected
                while answer == expected, ContinuousClock.now - started < .seconds(6) {
                    try await Task.sleep(for: .milliseconds(250))
                    answer = try await Self.queue(s, dodger)
                }
                #expect(answer == 200, "after the penalty of dodge \(expected - 202)")
                #expect(ContinuousClock.now - started >= .milliseconds(Int64(min(expected - 202, 3)) * 1000 - 300))
                #expect(try await Self.code(s, .delete, "/v1/queue", dodger) == 200)
            }
            #expect(try await Self.json(s, .get, "/v1/user", dodger)["dodgeNum"] as? Int == 4)

            // Three partners report the same user: the fourth search is refused with 201.
            let reported = try await Self.person(s, key, nick: "신고")
            for round in 1...3 {
                let partner = try await Self.person(s, key, nick: "짝\(round)")
                try await Self.match(s, reported, partner)
                let form = "otheruid=\(reported.uid)&reportedReputation=1&reportedReputation=0&comment=no"
                #expect(try await Self.code(s, .post, "/v1/user/report", partner, form: form) == 200)
                #expect(try await Self.code(s, .post, "/v1/user/report", partner, form: form) == 201, "once per reporter")
                #expect(try await Self.code(s, .post, "/v1/queue/dodge", partner, form: "otheruid=\(reported.uid)") == 200)
                #expect(try await Self.code(s, .delete, "/v1/queue", reported) == 200)
            }
            let user = try await Self.json(s, .get, "/v1/user", reported)
            #expect(user["reportedNum"] as? Int == 3 && (user["reportedUser"] as? [String])?.count == 3)
            #expect(try await Self.queue(s, reported) == 201)
        }
    }

    @Test("races: three accepting one request-sender at once make one match; two accepting each other at once make one match")
    func races() async throws {
        try await T.withStudy { s, key in
            let racing = s.onOwnConnections()  // really at once, not queued on one connection
            for round in 0..<4 {
                // A asks B, C and D; all three accept at once: exactly one 200, two 201.
                let a = try await Self.person(s, key, nick: "가\(round)")
                let others = [
                    try await Self.person(s, key, nick: "B\(round)"), try await Self.person(s, key, nick: "C\(round)"),
                    try await Self.person(s, key, nick: "D\(round)"),
                ]
                #expect(try await Self.queue(s, a) == 200)
                for other in others {
                    #expect(try await Self.queue(s, other) == 200)
                    #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", a, form: "otheruid=\(other.uid)") == 200)
                }
                let answers = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                    for other in others {
                        group.addTask { (other.uid, try await Self.code(racing, .post, "/v1/queue/studyaccept", other, form: "otheruid=\(a.uid)")) }
                    }
                    return try await group.reduce(into: [String: Int]()) { $0[$1.0] = $1.1 }
                }
                #expect(answers.values.sorted() == [200, 201, 201], "\(answers)")
                let winner = answers.first { $0.value == 200 }?.key
                #expect(try await Self.state(s, a)["matchedUid"] as? String == winner)
                for other in others where other.uid != winner {
                    #expect(try await Self.state(s, other)["matched"] as? Int == 0)
                }

                // E asks F; F accepts E while E accepts F: one match, whichever is first answered
                // 200, the other 203 or 202.
                let e = try await Self.person(s, key, nick: "E\(round)")
                let f = try await Self.person(s, key, nick: "F\(round)")
                #expect(try await Self.queue(s, e) == 200)
                #expect(try await Self.queue(s, f) == 200)
                #expect(try await Self.code(s, .post, "/v1/queue/studyrequest", e, form: "otheruid=\(f.uid)") == 200)
                async let byF = Self.code(racing, .post, "/v1/queue/studyaccept", f, form: "otheruid=\(e.uid)")
                async let byE = Self.code(racing, .post, "/v1/queue/studyaccept", e, form: "otheruid=\(f.uid)")
                let (fAnswer, eAnswer) = try await (byF, byE)
                #expect(
                    [fAnswer, eAnswer].filter { $0 == 200 }.count == 1 && [fAnswer, eAnswer].contains { [202, 203].contains($0) }, "F \(fAnswer), E \(eAnswer)")
                #expect(try await Self.state(s, e)["matchedUid"] as? String == f.uid)
                #expect(try await Self.state(s, f)["matchedUid"] as? String == e.uid)
            }
        }
    }
}
