import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// The study app's shop (`/v1/user/shop/…`): `myinfo` (the User object), `item` (wear an owned face
/// and background) and `ios` (an App Store purchase, verified, granted once per transaction).
extension StudyAPI {
    func addShop(to router: some RouterMethods<SuiteRequestContext>) {
        let shop = router.group("study/v1/user/shop")
        shop.get("myinfo") { request, _ in await answer { try await login(request) } }
        shop.post("item") { request, _ in await answer { try await wear(request) } }
        shop.post("ios") { request, _ in await answer { try await purchase(request) } }
    }

    /// `POST /v1/user/shop/item` (`sesac` 0–4, `background` 0–7): 200 worn; 201 either is not
    /// owned; 406; 501.
    private func wear(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let form = try await StudyForm.read(request)
        let sesac = try form.int("sesac", in: StudyShopItem.sesacs)
        let background = try form.int("background", in: StudyShopItem.backgrounds)
        let status = try await postgres.withConnection { [shop] c in try await shop.wear(uid, sesac: sesac, background: background, c) }
        return Response(status: .init(code: status))
    }

    /// `POST /v1/user/shop/ios` (`receipt`: the signed transaction, `product`): 200 the item is
    /// the user's; 201 the transaction does not verify, names another product, or was used
    /// before; 406; 501.
    private func purchase(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let form = try await StudyForm.read(request)
        let receipt = try form.string("receipt").trimmingCharacters(in: .whitespacesAndNewlines)
        let product = try form.string("product").trimmingCharacters(in: .whitespaces)
        guard !receipt.isEmpty, !product.isEmpty else { throw StudyRefusal.badField }
        guard try await postgres.withConnection({ try await users.find(uid, $0) }) != nil else { throw StudyRefusal.notRegistered }
        let transaction: AppStoreTransaction
        let item: StudyShopItem
        do {
            (transaction, item) = try await appStore.verify(receipt, product: product)
        } catch {
            // The reason, never the receipt.
            logger.warning("in-app purchase refused", metadata: ["study.uid": "\(uid)", "reason": "\(error)"])
            throw StudyRefusal.code(201)
        }
        let status = try await postgres.withTransaction(logger: logger) { [shop] c in try await shop.grant(uid, transaction, item, c) }
        return Response(status: .init(code: status))
    }
}

/// SQL of the shop.
struct StudyShopStore: Sendable {
    let logger: Logger

    /// 200 worn; 201 not owned; 406 not registered.
    func wear(_ uid: String, sesac: Int, background: Int, _ c: PostgresConnection) async throws -> Int {
        for try await owned in try await c.query(
            """
            UPDATE users SET sesac = CASE WHEN \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
                                        THEN \(Int32(sesac)) ELSE sesac END,
                             background = CASE WHEN \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
                                        THEN \(Int32(background)) ELSE background END
            WHERE uid = \(uid)
            RETURNING \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
            """, logger: logger
        ).decode(Bool.self) {
            return owned ? 200 : 201
        }
        return 406
    }

    /// Records the transaction (once, for one user) and adds its item to the user's collection:
    /// 200; 201 the transaction was used before; 406 the user withdrew meanwhile.
    func grant(_ uid: String, _ transaction: AppStoreTransaction, _ item: StudyShopItem, _ c: PostgresConnection) async throws -> Int {
        var registered = false
        for try await _ in try await c.query("SELECT 1 FROM users WHERE uid = \(uid) FOR UPDATE", logger: logger) { registered = true }
        guard registered else { return 406 }
        var fresh = false
        for try await _ in try await c.query(
            """
            INSERT INTO purchases (transaction_id, uid, product_id) VALUES (\(transaction.transactionId), \(uid), \(transaction.productId))
            ON CONFLICT (transaction_id) DO NOTHING RETURNING 1
            """, logger: logger)
        {
            fresh = true
        }
        guard fresh else { return 201 }
        let (sesac, background): (Int32?, Int32?) =
            switch item {
            case .sesac(let n): (Int32(n), nil)
            case .background(let n): (nil, Int32(n))
            }
        try await c.query(
            """
            UPDATE users SET transaction_id = array_append(transaction_id, \(transaction.transactionId)),
                sesac_collection = CASE WHEN \(sesac)::integer IS NULL OR \(sesac)::integer = ANY(sesac_collection) THEN sesac_collection
                                        ELSE array_append(sesac_collection, \(sesac)::integer) END,
                background_collection = CASE WHEN \(background)::integer IS NULL OR \(background)::integer = ANY(background_collection)
                                        THEN background_collection ELSE array_append(background_collection, \(background)::integer) END
            WHERE uid = \(uid)
            """, logger: logger)
        return 200
    }
}
