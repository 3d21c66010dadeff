import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SuiteTesting
import Synchronization
import TestSupport
import Testing

/// A login flood is shed at once, not queued: bcrypt admits a bounded number of hashes (waiting +
/// running); past it auth answers E98 (HTTP 429, `Retry-After`) right away, the admitted logins
/// still succeed, and routes without bcrypt stay fast. Before, every login queued for a hash
/// thread without limit (the gateway lets 100 requests/s per address through; two cores hash
/// ~30/s), so a flood turned into ever longer waits and client time-outs.
@Suite("Login floods are shed, not queued")
struct LoginFloodTests {
    struct Answer: Sendable {
        let status: Int
        let errorCode: String?
        let retryAfter: String?
        let email: String?
        let seconds: Double
        let finished: ContinuousClock.Instant
    }

    static let flood = 40

    @Test("more concurrent logins than the bcrypt bound: the excess gets E98 + Retry-After at once, the rest log in, other routes stay fast")
    func floodIsShed() async throws {
        // Two hashes at most (running or waiting), each slow (cost 12 ≈ 4 × the default's time).
        try await Stack.run(services: [.auth(env: ["AUTH_BCRYPT_MAX_PENDING": "2", "AUTH_BCRYPT_COST": "12"])]) { s in
            let password = "correct horse 1"
            let user = try await s.join(password: password)
            let port = try #require(s.client.port)
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.flood)
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let body = #"{"email":"\#(user.email)","password":"\#(password)"}"#
            // Each answer as it comes: the cheap requests below wait for the shed ones.
            let arrived = Mutex<[Answer]>([])
            let result: ([Answer], [Double], ContinuousClock.Instant)
            do {
                async let answers = Self.logins(http, port: port, body: body) { answer in arrived.withLock { $0.append(answer) } }
                // The flood's own requests are served first, in the order they came (40 at once
                // take a loaded CI machine over a second in the debug build); once all but the
                // bound's two are answered, only bcrypt is still busy. Routes without bcrypt
                // (auth's, through the gateway) must be fast then.
                try await Eventually.wait("the flood's shed answers", timeout: .seconds(30)) { arrived.withLock { $0.count } >= Self.flood - 2 }
                var cheap: [Double] = []
                for i in 0..<3 {
                    let started = ContinuousClock.now
                    let response = try await s.request(
                        .post, "/v1/users/validation/email", json: #"{"email":"free\#(i)-\#(UUID().uuidString.prefix(6))@example.com"}"#)
                    cheap.append(Self.seconds(since: started))
                    #expect(response.status == .ok, "email validation during the flood: \(outcome(response))")
                }
                let cheapDone = ContinuousClock.now
                result = (try await answers, cheap, cheapDone)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
            let (answers, cheap, cheapDone) = result

            let ok = answers.filter { $0.status == 200 }
            let shed = answers.filter { $0.status == 429 }
            let summary = answers.map { "\($0.status) \($0.errorCode ?? "") \(String(format: "%.2f", $0.seconds))s" }.joined(separator: ", ")
            #expect(answers.count == Self.flood)
            #expect(ok.count + shed.count == answers.count, "every answer is a login or E98: \(summary)")
            #expect(ok.allSatisfy { $0.email == user.email }, "admitted logins succeed: \(summary)")
            #expect(!ok.isEmpty, "some logins are admitted: \(summary)")
            #expect(!shed.isEmpty, "logins past the bound are shed: \(summary)")
            #expect(shed.allSatisfy { $0.errorCode == "E98" && $0.retryAfter != nil }, "shed with E98 and Retry-After: \(summary)")
            // Generous bounds (a loaded two-core machine); queued, the last of 40 cost-12 hashes on
            // two threads would take over 5 s.
            #expect(shed.allSatisfy { $0.seconds < 3 }, "shed at once: \(summary)")
            #expect(cheap.allSatisfy { $0 < 1 }, "a cheap route answers within 1 s during the flood: \(cheap)")
            // The cheap requests ran while bcrypt was busy: an admitted login (a cost-12 hash on a
            // thread of two) was still running when they were done.
            #expect(ok.contains { $0.finished > cheapDone }, "a hash was running throughout the cheap requests: \(summary)")
        }
    }

    static func logins(_ http: HTTPClient, port: Int, body: String, arrived: @escaping @Sendable (Answer) -> Void) async throws -> [Answer] {
        try await withThrowingTaskGroup(of: Answer.self) { group in
            for _ in 0..<flood {
                group.addTask {
                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/users/login")
                    request.method = .POST
                    request.headers.add(name: "SesacKey", value: Stack.appKey)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(string: body))
                    let started = ContinuousClock.now
                    let response = try await http.execute(request, timeout: .seconds(60))
                    let bytes = try await response.body.collect(upTo: 1 << 20)
                    let object = (try? JSONSerialization.jsonObject(with: Data(buffer: bytes))) as? [String: Any]
                    let answer = Answer(
                        status: Int(response.status.code), errorCode: object?["errorCode"] as? String,
                        retryAfter: response.headers.first(name: "Retry-After"), email: object?["email"] as? String,
                        seconds: seconds(since: started), finished: .now
                    )
                    arrived(answer)
                    return answer
                }
            }
            var answers: [Answer] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
