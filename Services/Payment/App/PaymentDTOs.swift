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
        billing_id = billing.id.uuidString.lowercased()
        merchant_uid = billing.merchantUID
        buyer_id = billing.buyer
        productName = billing.item.item
        price = billing.item.price
        sesacCoin = billing.item.coins
        paidAt = Timestamp.format(billing.paidAt)
    }
}
