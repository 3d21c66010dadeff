import Database
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
        let status = try await postgres.withLiveConnection { [shop] c in try await shop.wear(uid, sesac: sesac, background: background, c) }
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
        guard try await postgres.withLiveConnection({ try await users.find(uid, $0) }) != nil else { throw StudyRefusal.notRegistered }
        let transaction: AppStoreTransaction
        let item: StudyShopItem
        do {
            (transaction, item) = try await appStore.verify(receipt, product: product)
        } catch {
            // The reason, never the receipt.
            logger.warning("in-app purchase refused", metadata: ["study.uid": "\(uid)", "reason": "\(error)"])
            throw StudyRefusal.code(201)
        }
        let status = try await postgres.withLiveTransaction(logger: logger) { [shop] c in try await shop.grant(uid, transaction, item, c) }
        return Response(status: .init(code: status))
    }
}
