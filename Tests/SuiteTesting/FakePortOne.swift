import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Synchronization
import Testing

/// A stand-in for the PortOne (iamport) REST API on a real local port: `POST /users/getToken`
/// issues tokens for the test credentials, `GET /payments/{imp_uid}` answers what the test set
/// up for that payment — a payment record, a 500, or a reply slower than payment's timeout.
public final class FakePortOne: Sendable {
    public static let apiKey = "test-imp-key"
    public static let apiSecret = "test-imp-secret"

    public enum Answer: Sendable {
        case payment(status: String, merchantUID: String, name: String, amount: Double)
        case serverError
        case slow(Duration, then: Payment)
        public struct Payment: Sendable {
            public var merchantUID: String
            public var name: String
            public var amount: Double
            public init(merchantUID: String, name: String, amount: Double) {
                self.merchantUID = merchantUID
                self.name = name
                self.amount = amount
            }
        }
    }

    private let answers = Mutex<[String: Answer]>([:])
    private let issued = Mutex<Set<String>>([])
    private let counts = Mutex<(tokens: Int, lookups: Int)>((0, 0))

    public var tokenRequests: Int { counts.withLock { $0.tokens } }
    public var lookups: Int { counts.withLock { $0.lookups } }

    /// Sets up the answer for `impUID`; unknown ones answer 404 as PortOne does.
    public func set(_ impUID: String, _ answer: Answer) {
        answers.withLock { $0[impUID] = answer }
    }

    /// A paid payment of a catalogue item at its price.
    public func paid(_ impUID: String, merchantUID: String, name: String = "10 Coin", amount: Double = 100) {
        set(impUID, .payment(status: "paid", merchantUID: merchantUID, name: name, amount: amount))
    }

    /// Runs the fake on a free port for the duration of `body`, which gets its base URL.
    public static func run(_ body: @escaping @Sendable (FakePortOne, String) async throws -> Void) async throws {
        let fake = FakePortOne()
        let router = Router()
        router.post("/users/getToken") { request, context in try await fake.token(request, context) }
        router.get("/payments/:imp_uid") { request, context in try await fake.lookup(request, context) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body(fake, "http://127.0.0.1:\(try #require(client.port))")
        }
    }

    private func token(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        struct Credentials: Decodable { var imp_key: String; var imp_secret: String }
        let credentials = try await request.decode(as: Credentials.self, context: context)
        guard credentials.imp_key == Self.apiKey, credentials.imp_secret == Self.apiSecret else {
            return Self.json(.unauthorized, ["code": -1, "message": "unknown key", "response": NSNull()])
        }
        let token = "token-\(UUID().uuidString)"
        issued.withLock { _ = $0.insert(token) }
        counts.withLock { $0.tokens += 1 }
        let now = Int(Date().timeIntervalSince1970)
        return Self.json(.ok, ["code": 0, "message": NSNull(), "response": ["access_token": token, "now": now, "expired_at": now + 1800] as [String: Any]])
    }

    private func lookup(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        guard let token = request.headers[.authorization], issued.withLock({ $0.contains(token) }) else {
            return Self.json(.unauthorized, ["code": -1, "message": "Unauthorized", "response": NSNull()])
        }
        counts.withLock { $0.lookups += 1 }
        let impUID = context.parameters.get("imp_uid") ?? ""
        switch answers.withLock({ $0[impUID] }) {
        case nil:
            return Self.json(.notFound, ["code": -1, "message": "존재하지 않는 결제정보입니다.", "response": NSNull()])
        case .serverError:
            return Self.json(.internalServerError, ["code": -1, "message": "internal error", "response": NSNull()])
        case .slow(let delay, let payment):
            try await Task.sleep(for: delay)
            return Self.payment(impUID, status: "paid", payment.merchantUID, payment.name, payment.amount)
        case .payment(let status, let merchantUID, let name, let amount):
            return Self.payment(impUID, status: status, merchantUID, name, amount)
        }
    }

    private static func payment(_ impUID: String, status: String, _ merchantUID: String, _ name: String, _ amount: Double) -> Response {
        json(
            .ok,
            [
                "code": 0, "message": NSNull(),
                "response": [
                    "imp_uid": impUID, "merchant_uid": merchantUID, "status": status, "amount": amount, "name": name,
                    "paid_at": status == "paid" ? 1_719_837_296 : 0, "pay_method": "card", "currency": "KRW",
                ] as [String: Any],
            ])
    }

    private static func json(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

extension FakePortOne {
    /// Payment's settings for talking to the fake at `url`.
    public static func environment(url: String, timeoutMilliseconds: Int = 2_000) -> [String: String] {
        [
            "PAYMENT_PORTONE_URL": url, "PAYMENT_PORTONE_API_KEY": apiKey, "PAYMENT_PORTONE_API_SECRET": apiSecret,
            "PAYMENT_PORTONE_TIMEOUT_MS": String(timeoutMilliseconds),
        ]
    }
}
