import Common
import Database
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ServiceKit
import Testing
import TestSupport

struct Stamped: ResponseEncodable {
    var createdAt: Date
}

struct Boom: Error {}

func makeTestApp(gate: StartupGate, checks: [(name: String, check: HealthChecks.Check)] = []) -> some ApplicationProtocol {
    let router = Router(context: SuiteRequestContext.self)
    router.middlewares.add(ErrorMiddleware())
    HealthChecks(startup: gate, checks: checks, cacheInterval: .zero).addRoutes(to: router)
    router.get("/client-error") { _, _ -> String in throw APIError.badRequest("name is empty") }
    router.get("/expired") { _, _ -> String in throw APIError.accessTokenExpired }
    router.get("/boom") { _, _ -> String in throw Boom() }
    router.get("/date") { _, _ in Stamped(createdAt: Date(timeIntervalSince1970: 1_732_240_800.1239)) }
    router.post("/echo") { request, context -> Stamped in try await request.decode(as: StampedInput.self, context: context).asStamped }
    return Application(router: router)
}

struct StampedInput: Decodable {
    var createdAt: Date
    var asStamped: Stamped { Stamped(createdAt: createdAt) }
}

@Suite("HTTP conventions: errors, dates, health")
struct HTTPBehaviourTests {
    @Test func domainErrorsUseTheContractBody() async throws {
        try await makeTestApp(gate: StartupGate()).test(.router) { client in
            try await client.execute(uri: "/client-error", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body) == #"{"errorCode":"E11"}"#)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
            }
            try await client.execute(uri: "/expired", method: .get) { response in
                #expect(response.status == .badRequest, "E05 must be HTTP 400 (AMOR refreshes only on 400)")
                #expect(String(buffer: response.body) == #"{"errorCode":"E05"}"#)
            }
        }
    }

    @Test func unexpectedErrorsAreE99WithoutDetail() async throws {
        try await makeTestApp(gate: StartupGate()).test(.router) { client in
            try await client.execute(uri: "/boom", method: .get) { response in
                #expect(response.status == .internalServerError)
                #expect(String(buffer: response.body) == #"{"errorCode":"E99"}"#)
            }
        }
    }

    @Test func unknownRoutesAreE97() async throws {
        try await makeTestApp(gate: StartupGate()).test(.router) { client in
            try await client.execute(uri: "/v1/nope", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body) == #"{"errorCode":"E97"}"#)
            }
        }
    }

    @Test func datesHaveMillisecondsAndZ() async throws {
        try await makeTestApp(gate: StartupGate()).test(.router) { client in
            try await client.execute(uri: "/date", method: .get) { response in
                #expect(String(buffer: response.body) == #"{"createdAt":"2024-11-22T02:00:00.123Z"}"#)
            }
            try await client.execute(
                uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"createdAt":"2024-11-22T11:00:00.5+09:00"}"#)
            ) { response in
                #expect(String(buffer: response.body) == #"{"createdAt":"2024-11-22T02:00:00.500Z"}"#)
            }
            try await client.execute(
                uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"createdAt":"not a date"}"#)
            ) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body) == #"{"errorCode":"E11"}"#)
            }
        }
    }

    @Test func readinessFollowsStartupAndChecks() async throws {
        let gate = StartupGate()
        let healthy = Locked(true)
        let app = makeTestApp(gate: gate, checks: [("database", { if !healthy.value { throw Boom() } })])
        try await app.test(.router) { client in
            try await client.execute(uri: "/health/live", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body).contains("startup"))
            }
            gate.open()
            try await client.execute(uri: "/health/ready", method: .get) { #expect($0.status == .ok) }
            healthy.withLock { $0 = false }
            try await client.execute(uri: "/health/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body).contains("database"))
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
            }
        }
    }
}

@Suite("Errors thrown inside a PostgreSQL transaction")
struct TransactionErrorMappingTests {
    /// postgres-nio's transaction and the live one: both wrap the closure's error in
    /// `PostgresTransactionError`, and `ErrorMiddleware` unwraps it, so a domain error keeps its code.
    @Test("a domain error thrown inside a transaction keeps its code (E12)", arguments: ["withTransaction", "withLiveTransaction"])
    func domainErrorInsideATransactionKeepsItsCode(way: String) async throws {
        let db = try await TestDatabase.create()
        let caught: (any Error)? = try await db.withClient { client in
            do {
                if way == "withLiveTransaction" {
                    try await client.withLiveTransaction(logger: TestDatabase.logger) { _ in throw APIError.duplicate("email") }
                } else {
                    try await client.withTransaction(logger: TestDatabase.logger) { _ in throw APIError.duplicate("email") }
                }
                return nil
            } catch {
                return error
            }
        }
        let error = try #require(caught)
        #expect(error is PostgresTransactionError, "the closure's error is wrapped (\(way))")
        #expect(ErrorMiddleware<SuiteRequestContext>.map(error).code == "E12")
        try await db.drop()
    }

    @Test("a live transaction whose backend is terminated answers 503 E99, not 500, and no later than 10 s")
    func terminatedBackendIsAnOutage() async throws {
        let db = try await TestDatabase.create()
        let started = ContinuousClock.now
        let caught: (any Error)? = try await db.withClient { client in
            let server = try TestDatabase.serverConfiguration
            return try await TestDatabase.withRunningClient(server.makeClient(logger: TestDatabase.logger)) { admin in
                let pid = Locked<Int32?>(nil)
                async let outcome: (any Error)? = {
                    do {
                        try await client.withLiveTransaction(logger: TestDatabase.logger) { connection in
                            for try await backend in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                                pid.withLock { $0 = backend }
                            }
                            _ = try await connection.query("SELECT pg_sleep(30)", logger: TestDatabase.logger)
                            _ = try await connection.query("SELECT 1", logger: TestDatabase.logger)
                        }
                        return nil
                    } catch {
                        return error
                    }
                }()
                while pid.value == nil { try await Task.sleep(for: .milliseconds(20)) }
                try await Task.sleep(for: .milliseconds(200))
                _ = try await admin.query("SELECT pg_terminate_backend(\(pid.value ?? 0))", logger: TestDatabase.logger)
                return await outcome
            }
        }
        let error = try #require(caught, "the transaction's backend was terminated mid-way")
        let mapped = ErrorMiddleware<SuiteRequestContext>.map(error)
        #expect(mapped.status == .serviceUnavailable && mapped.code == "E99", "\(String(reflecting: error))")
        #expect(ContinuousClock.now - started < .seconds(10))
        try await db.drop()
    }
}
