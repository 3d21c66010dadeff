import ArgumentParser
import AsyncHTTPClient
import Common
import CryptoExtras
import Database
import Events
import FirebaseAuth
import Foundation
import Hummingbird
import JWTKit
import Kafka
import LoadGen
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import ServiceCatalog

/// `chatsuite bench study-search`: `POST /v1/queue/search` latency with `--users` people searching
/// in one city (Seoul's 22 × 26 km), straight to the built `study` executable (its own HTTP
/// server, Firebase token check, PostgreSQL with cube + earthdistance). Self-contained: an embedded
/// Kafka broker, a fresh database on the given PostgreSQL server, a Firebase key set served from
/// this process, and the queue filled with SQL (sign-ups would only measure the setup).
struct StudySearchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "study-search", abstract: "Study queue search latency with a full city.")

    @Option(help: "Admin URL of a PostgreSQL server (e.g. from `chatsuite postgres start`; secret).")
    var databaseURL: String

    @Option(help: "People searching in the city.")
    var users: Int = 100_000

    @Option(help: "Concurrent searchers.")
    var concurrency: Int = 8

    @Option(help: "Seconds of searching.")
    var seconds: Int = 20

    @Option(help: "Port of the study process (the key set takes the next one).")
    var port: Int = 18_570

    /// The city: Seoul, roughly.
    static let latitudes = 37.45...37.65
    static let longitudes = 126.85...127.15

    func run() async throws {
        var logger = Logger(label: "chatsuite.bench.study")
        logger.logLevel = .warning
        let run = UUID().uuidString.prefix(8).lowercased()
        let bench = try await BenchBackbone(databaseURL: databaseURL, prefix: "bench_study", logger: logger)

        // A Firebase key set of our own, served from here.
        let backing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signer = JWTKeyCollection()
        await signer.add(rsa: try Insecure.RSA.PrivateKey(backing: backing), digestAlgorithm: .sha256, kid: JWKIdentifier(string: "bench"))
        let (modulus, exponent) = try Insecure.RSA.PublicKey(backing: backing.publicKey).getKeyPrimitives()
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let jwks = try JSONSerialization.data(withJSONObject: [
            "keys": [["kty": "RSA", "alg": "RS256", "use": "sig", "kid": "bench", "n": base64URL(modulus), "e": base64URL(exponent)]]
        ])
        let router = Router()
        router.get("keys") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: jwks)))
        }
        let keySet = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port + 1)))
        let keySetTask = Task { try await keySet.runService() }
        defer { keySetTask.cancel() }

        // The study process.
        let process = try await bench.start(
            .study, port: port,
            environment: ["STUDY_FIREBASE_PROJECT_ID": "bench", "STUDY_FIREBASE_JWKS_URL": "http://127.0.0.1:\(port + 1)/keys"])
        defer {
            process.terminate()
            process.waitUntilExit()
        }

        // The city: `users` people searching, spread evenly, ages 20–56, two studies each.
        let setupStart = ContinuousClock.now
        let users = self.users
        try await bench.withDatabase { c in
            _ = try await c.query(
                """
                INSERT INTO users (uid, object_id, phone_number, email, fcm_token, nick, birth, gender)
                SELECT 'bench-' || i, lpad(to_hex(i), 24, '0'), '+8210' || lpad(i::text, 8, '0'), 'bench' || i || '@example.com', 'fcm-' || i,
                       '새싹' || (i % 10000), now() - make_interval(years => 20 + i % 37), i % 2
                FROM generate_series(1, \(Int32(users))) AS i
                """)
            _ = try await c.query(
                """
                INSERT INTO queue (uid, lat, long, location, studylist)
                SELECT uid, lat, long, ll_to_earth(lat, long), ARRAY['Swift', '알고리즘']
                FROM (SELECT 'bench-' || i AS uid, \(Self.latitudes.lowerBound) + random() * \(Self.latitudes.upperBound - Self.latitudes.lowerBound) AS lat,
                             \(Self.longitudes.lowerBound) + random() * \(Self.longitudes.upperBound - Self.longitudes.lowerBound) AS long
                      FROM generate_series(1, \(Int32(users))) AS i) AS people
                """)
            _ = try await c.query("ANALYZE")
        }
        print("setup: \(users) people searching in \(ContinuousClock.now - setupStart)")

        // The searcher signs up through the service, like the app.
        let token = try await signer.sign(
            FirebaseIDToken(project: "bench", uid: "bench-searcher-\(run)", issuedAt: Date()), kid: JWKIdentifier(string: "bench"))
        let base = "http://127.0.0.1:\(port)/study/v1"
        @Sendable func post(_ path: String, _ form: String) async throws -> (HTTPResponseStatus, ByteBuffer) {
            var request = HTTPClientRequest(url: base + path)
            request.method = .POST
            request.headers.add(name: "idtoken", value: token)
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: form))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            return (response.status, try await response.body.collect(upTo: 8 << 20))
        }
        let signUp = "phoneNumber=%2B821000000000&FCMtoken=bench&nick=bench&birth=1994-01-02T00%3A00%3A00.000Z&email=bench%40example.com&gender=1"
        guard try await post("/user", signUp).0 == .ok else { throw ValidationError("the searcher's sign-up failed") }

        let indexScans = { () async throws -> Int64 in
            let scans = Locked<Int64>(0)
            try await bench.withDatabase { c in
                for try await n in try await c.query(
                    "SELECT coalesce(sum(idx_scan), 0)::int8 FROM pg_stat_user_indexes WHERE indexrelname = 'queue_searching_location'"
                ).decode(Int64.self) { scans.withLock { $0 = n } }
            }
            return scans.withLock { $0 }
        }
        let scansBefore = try await indexScans()
        let found = Locked((searches: 0, people: 0))
        let result = try await LoadRunner(concurrency: concurrency, duration: .seconds(seconds)).run { _, _ in
            let lat = Double.random(in: Self.latitudes.lowerBound + 0.01...Self.latitudes.upperBound - 0.01)
            let long = Double.random(in: Self.longitudes.lowerBound + 0.01...Self.longitudes.upperBound - 0.01)
            let (status, body) = try await post("/queue/search", "lat=\(lat)&long=\(long)")
            guard status == .ok, let answer = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                let near = answer["fromQueueDB"] as? [Any]
            else { return false }
            found.withLock {
                $0.searches += 1
                $0.people += near.count
            }
            return true
        }
        try await Task.sleep(for: .seconds(2))  // statistics are flushed about once a second
        let scans = try await indexScans() - scansBefore
        print(result.line("searches", concurrency: concurrency))
        let (searches, people) = found.withLock { ($0.searches, $0.people) }
        print(
            String(
                format: "people found per search: %.1f on average (at most 100 answered); GiST index scans: %lld for %d searches",
                Double(people) / Double(max(searches, 1)), scans, searches))
        try await bench.dropDatabase()
    }
}
