import Configuration
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Kafka
import NIOCore
import PaymentApp
import PostgresNIO
import ServiceKit
import SuiteTesting
import Testing
import TestSupport
import WorkspaceApp

/// Services taken away mid-saga and started again on the same database: no workspace without a
/// debit, no debit without a workspace, no coin lost. The services run without the gateway
/// (requests carry the identity header the gateway would set), so each can be stopped alone.
@Suite("Coin saga across restarts")
struct SagaCrashTests {
    /// Workspace and payment on one embedded cluster and their own databases, restartable.
    struct Services: Sendable {
        let cluster: EmbeddedKafkaCluster
        let workspaceDB: TestDatabase
        let paymentDB: TestDatabase
        let portOneURL: String

        private func settings(_ name: String, _ defaults: [AbsoluteConfigKey: ConfigValue], _ db: TestDatabase, _ env: [String: String]) -> ServiceSettings {
            let common = [
                "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
                "DATABASE_URL": db.configuration.url,
            ]
            return ServiceSettings(serviceName: name, defaults: defaults, environment: common.merging(env) { $1 }, arguments: [name])
        }

        var filesDirectory: String { Self.filesDirectory(workspaceDB) }

        static func filesDirectory(_ workspaceDB: TestDatabase) -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent("ws-files-\(workspaceDB.name)").path
        }

        func startWorkspace() async throws -> RunningService {
            let s = settings(
                "workspace", WorkspaceService.defaults, workspaceDB,
                [
                    "WORKSPACE_CREATION_COST": "10", "WORKSPACE_SAGA_TIMEOUT_MS": "1500",
                    "WORKSPACE_FILES_DIRECTORY": filesDirectory,
                ])
            return try await RunningService.start { try await WorkspaceApp.buildApplication(settings: s, logger: TestDatabase.logger) }
        }

        func startPayment() async throws -> RunningService {
            let s = settings("payment", PaymentService.defaults, paymentDB, FakePortOne.environment(url: portOneURL))
            return try await RunningService.start { try await PaymentApp.buildApplication(settings: s, logger: TestDatabase.logger) }
        }

        static func run(_ body: @escaping @Sendable (Services, FakePortOne, PostgresClient, PostgresClient) async throws -> Void) async throws {
            let cluster = try TestKafka.catalogCluster(brokers: 1)
            let workspaceDB = try await TestDatabase.create(prefix: "ws")
            let paymentDB = try await TestDatabase.create(prefix: "pay")
            try await FakePortOne.run { fake, url in
                let services = Services(cluster: cluster, workspaceDB: workspaceDB, paymentDB: paymentDB, portOneURL: url)
                try await workspaceDB.withClient { workspace in
                    try await paymentDB.withClient { payment in
                        try await body(services, fake, workspace, payment)
                    }
                }
            }
            try? FileManager.default.removeItem(atPath: filesDirectory(workspaceDB))
            try await workspaceDB.drop()
            try await paymentDB.drop()
        }
    }

    static func identity(_ user: UserID, contentType: String) -> HTTPFields {
        [GatewayHeader.userId: user.description, .contentType: contentType]
    }

    /// Buys `item` directly at payment for `user`.
    static func buy(_ payment: RunningService, _ fake: FakePortOne, _ user: UserID, item: String = "50 Coin", price: Double = 500) async throws {
        let impUID = "imp_\(UUID().uuidString.prefix(12))"
        fake.paid(impUID, merchantUID: "m_\(impUID)", name: item, amount: price)
        let response = try await payment.client.execute(
            uri: "/v1/store/pay/validation", method: .post, headers: identity(user, contentType: "application/json"),
            body: ByteBuffer(string: #"{"imp_uid":"\#(impUID)","merchant_uid":"m_\#(impUID)"}"#)
        )
        #expect(response.status == .ok, "buy: \(String(buffer: response.body))")
    }

    /// `POST /v1/workspaces` at the workspace service; returns the status and error code.
    static func create(_ workspace: RunningService, _ user: UserID, name: String) async throws -> String {
        let body = multipart(fields: ["name": name])
        return outcome(
            try await workspace.client.execute(
                uri: "/v1/workspaces", method: .post, headers: identity(user, contentType: body.contentType), body: body.body
            ))
    }

    static func states(_ db: PostgresClient, _ user: UserID) async throws -> [String: Int] {
        try await db.query("SELECT state FROM workspaces WHERE owner_id = \(user.uuid)").decode(String.self)
            .reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
    }

    /// Warm-up: both saga consumer groups have joined once a paid creation completes.
    static func warmUp(_ workspace: RunningService, _ workspaceDB: PostgresClient, _ user: UserID) async throws {
        let first = try await create(workspace, user, name: "warm-\(user.description.suffix(12))")
        #expect(["200", "503 E99"].contains(first), "warm-up creation: \(first)")
        try await eventually("the warm-up creation completes", timeout: .seconds(30)) {
            try await states(workspaceDB, user) == ["active": 1]
        }
    }

    @Test("payment stopped while a creation waits: E99 (503), and the workspace completes when payment is back")
    func paymentRestart() async throws {
        try await Services.run { services, fake, workspaceDB, paymentDB in
            let user = UserID.generate()
            var payment = try await services.startPayment()
            let workspace = try await services.startWorkspace()
            try await Self.buy(payment, fake, user)
            try await Self.warmUp(workspace, workspaceDB, user)

            try await payment.stop()
            #expect(try await Self.create(workspace, user, name: "during-outage") == "503 E99")
            #expect(try await Self.states(workspaceDB, user) == ["active": 1, "pending": 1])

            payment = try await services.startPayment()
            try await eventually("the pending workspace completes", timeout: .seconds(30)) {
                try await Self.states(workspaceDB, user) == ["active": 2]
            }
            #expect(
                try await LedgerTotals.read(paymentDB, user: user.description) == LedgerTotals(balance: 30, credits: 50, debits: 20, refunds: 0, entries: 3))
            try await workspace.stop()
            try await payment.stop()
        }
    }

    @Test("payment stopped after the debit, before its reply left the outbox: the reply goes out on restart, debited once")
    func paymentStopsBeforeReply() async throws {
        try await Services.run { services, fake, workspaceDB, paymentDB in
            let user = UserID.generate()
            let workspace = try await services.startWorkspace()
            var payment = try await services.startPayment()
            try await Self.buy(payment, fake, user)
            try await Self.warmUp(workspace, workspaceDB, user)
            try await payment.stop()

            // Holding the relay's leader lock keeps payment's replies in its outbox: the debit
            // commits with its reply, which is not published before payment stops.
            try await paymentDB.withConnection { lock in
                _ = try await lock.query("SELECT pg_advisory_lock(\(OutboxRelay.leaderLockId))", logger: TestDatabase.logger)
                let stalled = try await services.startPayment()
                #expect(try await Self.create(workspace, user, name: "reply-stuck") == "503 E99")
                try await eventually("the debit is taken", timeout: .seconds(30)) {
                    try await LedgerTotals.read(paymentDB, user: user.description).debits == 20
                }
                let unpublished = try await lock.query(
                    "SELECT count(*) FROM outbox WHERE event_type = 'payment.coins.debited' AND published_at IS NULL", logger: TestDatabase.logger
                ).decode(Int64.self).reduce(0, +)
                #expect(unpublished == 1)
                try await stalled.stop()
                _ = try await lock.query("SELECT pg_advisory_unlock(\(OutboxRelay.leaderLockId))", logger: TestDatabase.logger)
            }
            #expect(try await Self.states(workspaceDB, user) == ["active": 1, "pending": 1])

            payment = try await services.startPayment()
            try await eventually("the creation completes from the published reply", timeout: .seconds(30)) {
                try await Self.states(workspaceDB, user) == ["active": 2]
            }
            #expect(
                try await LedgerTotals.read(paymentDB, user: user.description) == LedgerTotals(balance: 30, credits: 50, debits: 20, refunds: 0, entries: 3))
            try await workspace.stop()
            try await payment.stop()
        }
    }

    @Test("workspace stopped after the debit: completion on restart; a debit whose workspace is gone is refunded")
    func workspaceRestart() async throws {
        try await Services.run { services, fake, workspaceDB, paymentDB in
            let completes = UserID.generate()
            let orphaned = UserID.generate()
            var payment = try await services.startPayment()
            var workspace = try await services.startWorkspace()
            try await Self.buy(payment, fake, completes)
            try await Self.buy(payment, fake, orphaned)
            try await Self.warmUp(workspace, workspaceDB, completes)

            // Both creations are requested while payment is away, then workspace goes away too.
            try await payment.stop()
            #expect(try await Self.create(workspace, completes, name: "survives") == "503 E99")
            #expect(try await Self.create(workspace, orphaned, name: "vanishes") == "503 E99")
            try await workspace.stop()

            // Payment debits both while workspace is down.
            payment = try await services.startPayment()
            try await eventually("both debits are taken", timeout: .seconds(30)) {
                let orphanedDebits = try await LedgerTotals.read(paymentDB, user: orphaned.description).debits
                let completedDebits = try await LedgerTotals.read(paymentDB, user: completes.description).debits
                return orphanedDebits == 10 && completedDebits == 20
            }
            // One pending creation disappears before its answer is read (e.g. removed by an operator).
            _ = try await workspaceDB.query("DELETE FROM workspaces WHERE owner_id = \(orphaned.uuid) AND state = 'pending'")

            workspace = try await services.startWorkspace()
            try await eventually("the surviving creation completes", timeout: .seconds(30)) {
                try await Self.states(workspaceDB, completes) == ["active": 2]
            }
            try await eventually("the orphaned debit is refunded", timeout: .seconds(30)) {
                try await LedgerTotals.read(paymentDB, user: orphaned.description).refunds == 10
            }
            #expect(try await Self.states(workspaceDB, orphaned) == [:])
            #expect(
                try await LedgerTotals.read(paymentDB, user: completes.description)
                    == LedgerTotals(balance: 30, credits: 50, debits: 20, refunds: 0, entries: 3))
            #expect(
                try await LedgerTotals.read(paymentDB, user: orphaned.description)
                    == LedgerTotals(balance: 50, credits: 50, debits: 10, refunds: 10, entries: 3))
            try await workspace.stop()
            try await payment.stop()
        }
    }
}
