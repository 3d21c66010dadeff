import Common
import Events
import Foundation
import NIOCore
import HummingbirdTesting
import HTTPTypes
import Kafka
import SuiteTesting
import Testing
import TestSupport

/// The workspace side of the coin saga, with the test playing `payment`: it reads the debit
/// requests from `workspace.v1` and answers on `payment.v1` through the real Kafka protocol.
@Suite("Workspace creation coin saga")
struct CoinSagaTests {
    enum Decision: Sendable { case approve, reject, approveLate }

    /// A stand-in for the payment service deciding by user.
    static func payment(_ cluster: EmbeddedKafkaCluster, decide: @escaping @Sendable (UserID) -> Decision) -> Task<Void, any Error> {
        Task {
            let consumer = try TestKafka.groupConsumer(cluster, group: "fake-payment", topics: [Topic.workspace.name])
            let producer = try TestKafka.producer(cluster)
            for try await message in consumer.messages {
                guard let value = message.value, try EventCoding.header(from: value).type == WorkspaceEvents.CoinDebitRequested.eventType else { continue }
                let request = try EventCoding.decode(WorkspaceEvents.CoinDebitRequested.self, from: value).data
                let bytes: [UInt8]
                switch decide(request.userId) {
                case .approve, .approveLate:
                    if decide(request.userId) == .approveLate { try await Task.sleep(for: .seconds(8)) }
                    bytes = try EventCoding.encode(
                        CloudEvent(
                            source: "payment",
                            data: PaymentEvents.CoinsDebited(
                                requestId: request.requestId, workspaceId: request.workspaceId, userId: request.userId, amount: request.amount,
                                balance: 900, version: 2)))
                case .reject:
                    bytes = try EventCoding.encode(
                        CloudEvent(
                            source: "payment",
                            data: PaymentEvents.CoinDebitRejected(
                                requestId: request.requestId, userId: request.userId, amount: request.amount, reason: .insufficientCoins, balance: 10,
                                version: 1)))
                }
                // A duplicate reply (at-least-once delivery) must change nothing.
                for _ in 0..<2 {
                    _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: Topic.payment.name, key: request.userId.description, value: bytes))
                }
            }
        }
    }

    @Test("approved: 200 and visible; rejected: E21, nothing left, name free; unanswered: E99 (503), then visible once approved")
    func saga() async throws {
        try await Stack.workspaces(workspaceEnvironment: ["WORKSPACE_CREATION_COST": "100", "WORKSPACE_SAGA_TIMEOUT_MS": "3000"]) { s in
            let warm = try await s.user()
            let rich = try await s.user()
            let poor = try await s.user()
            let slow = try await s.user()
            let decisions: [String: Decision] = [warm.id: .approve, rich.id: .approve, poor.id: .reject, slow.id: .approveLate]
            let payment = Self.payment(s.cluster) { decisions[$0.description] ?? .reject }
            defer { payment.cancel() }
            // Warm-up: both consumer groups (the fake payment's and the workspace's) join first;
            // the first answer may come after the timeout, so only its effect is awaited.
            _ = try await s.multipartRequest(.post, "/v1/workspaces", warm, fields: ["name": "warm-up"])
            try await eventually("the warm-up creation is approved", timeout: .seconds(30)) {
                try #require(jsonArray(try await s.get("/v1/workspaces", warm))).count == 1
            }

            let approved = try await s.multipartRequest(.post, "/v1/workspaces", rich, fields: ["name": "paid"])
            #expect(approved.status == .ok, "\(String(buffer: approved.body))")
            let wid = id(jsonObject(approved), "workspace_id")
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", rich))).map { id($0, "workspace_id") } == [wid])
            #expect(try await s.get("/v1/workspaces/\(wid)", rich).status == .ok)

            let rejected = try await s.multipartRequest(.post, "/v1/workspaces", poor, fields: ["name": "unpaid"], image: jpegBytes)
            #expect(outcome(rejected) == "400 E21")
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", poor))).isEmpty)

            let late = try await s.multipartRequest(.post, "/v1/workspaces", slow, fields: ["name": "unpaid"])
            #expect(outcome(late) == "503 E99")
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", slow))).isEmpty)  // pending is invisible
            // The name is held while the debit is pending.
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", rich, fields: ["name": "unpaid"])) == "400 E12")
            try await eventually("late approval activates the workspace") {
                try #require(jsonArray(try await s.get("/v1/workspaces", slow))).count == 1
            }

            // The created events follow the debit request, once each.
            let events = try await WorkspaceEventsTests.read(s.cluster) { seen in
                seen.filter { $0.type == "workspace.created" }.count >= 3 && seen.filter { $0.type == "workspace.coin-debit-requested" }.count >= 4
            }
            #expect(events.filter { $0.type == "workspace.coin-debit-requested" }.count == 4)
            #expect(events.filter { $0.type == "workspace.created" }.count == 3)
            #expect(events.filter { $0.subject == wid }.map(\.type).prefix(2) == ["workspace.coin-debit-requested", "workspace.created"])
            #expect(events.first { $0.type == "workspace.coin-debit-requested" }?.data["amount"] == "100")
        }
    }
}
