import ClientContract
import Events
import Foundation
import Hummingbird
import ServiceKit

// Shapes of the client contract §1.11: catalogue values are strings; the validation answer is
// the Gen B billing record with dates as yyyy-MM-ddTHH:mm:ss.SSSZ.

/// `GET /v1/store/item/list` element.
struct StoreItemResponse: ResponseEncodable, Sendable {
    var item: String
    var amount: String

    init(_ item: StoreItem) {
        self.item = item.item
        amount = String(item.price)
    }
}

/// `POST /v1/store/pay/validation` body, JSON or form-urlencoded.
struct ValidationBody: Decodable, Sendable {
    var imp_uid: String?
    var merchant_uid: String?
}

/// `POST /v1/store/pay/validation` answer. `sesacCoin` is the coins this payment bought (the
/// client refetches `/users/me` for the balance).
struct BillingResponse: ResponseEncodable, Sendable {
    var billing_id: String
    var merchant_uid: String
    var buyer_id: UserID
    var productName: String
    var price: Int
    var sesacCoin: Int
    var paidAt: String

    init(_ billing: BillingRecord) {
        billing_id = billing.id.lowercased
        merchant_uid = billing.merchantUID
        buyer_id = billing.buyer
        productName = billing.item.item
        price = billing.item.price
        sesacCoin = billing.item.coins
        paidAt = Timestamp.format(billing.paidAt)
    }
}

/// Gen A's `POST /v1/store/pay/validation` answer (Lilac's `BillingResult`, client contract §1.9):
/// `billing_id` is an integer, `amount` what was paid, `sesacCoin` the coins it bought, `success`
/// true (a refused validation is an error code, as in Gen B).
struct GenerationABilling: ResponseEncodable, Sendable {
    var billing_id: Int64
    var merchant_uid: String
    var amount: Int
    var sesacCoin: Int
    var success: Bool
    var createdAt: String

    init(_ billing: BillingRecord) {
        billing_id = GenerationAID.of(billing.id)
        merchant_uid = billing.merchantUID
        amount = billing.item.price
        sesacCoin = billing.item.coins
        success = true
        createdAt = Timestamp.format(billing.paidAt)
    }
}
