import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization

/// A local stand-in for PortOne's REST API for the drill: tokens for its own key, and every
/// payment the drill registered answers `paid` at the catalogue price of "10 Coin".
final class DrillPortOne: Sendable {
    static let apiKey = "drill-imp-key"
    static let apiSecret = "drill-imp-secret"
    static let item = "10 Coin"
    static let price = 100
    static let coins = 10

    /// imp_uid → merchant_uid of the payments the drill made.
    private let payments = Mutex<[String: String]>([:])

    func register(impUID: String, merchantUID: String) {
        payments.withLock { $0[impUID] = merchantUID }
    }

    /// Serves on `port` until the task is cancelled.
    func run(port: Int) async throws {
        let router = Router()
        router.post("/users/getToken") { _, _ -> Response in
            let now = Int(Date().timeIntervalSince1970)
            return Self.json(#"{"code":0,"message":null,"response":{"access_token":"drill-token","now":\#(now),"expired_at":\#(now + 1800)}}"#)
        }
        router.get("/payments/:imp_uid") { _, context -> Response in
            let impUID = context.parameters.get("imp_uid") ?? ""
            guard let merchantUID = self.payments.withLock({ $0[impUID] }) else {
                return Self.json(#"{"code":-1,"message":"not found","response":null}"#, status: .notFound)
            }
            let paidAt = Int(Date().timeIntervalSince1970)
            return Self.json(
                #"""
                {"code":0,"message":null,"response":{"imp_uid":"\#(impUID)","merchant_uid":"\#(merchantUID)","status":"paid","name":"\#(Self.item)","amount":\#(Self.price),"paid_at":\#(paidAt),"buyer_email":null}}
                """#)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }

    private static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
