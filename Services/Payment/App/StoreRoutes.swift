import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// The coin store (client contract §1.11): the catalogue and the validation of a PortOne payment.
///
/// Validation rules, in order (docs/payment-api.md):
/// 1. `imp_uid` and `merchant_uid` are present, ≤ 100 characters of `[A-Za-z0-9_-.]` (else E11).
/// 2. A payment already billed is E81 (no PortOne call).
/// 3. PortOne must know it (else E81, "payment not found"); any failure to ask PortOne is E99
///    (503) and credits nothing.
/// 4. It must be `paid`, carry the client's `merchant_uid`, name a catalogue item (`name` equals
///    the item's `item`, which is what clients send) and charge exactly that item's price (else E82).
/// 5. The billing and the credit are written in one transaction; the unique `imp_uid` lets one
///    of any number of concurrent validations win, the others answer E81.
struct StoreRoutes: Sendable {
    let postgres: PostgresClient
    let records: StoreRecords
    let ledger: CoinLedger
    let portOne: PortOneClient
    let logger: Logger

    static let source = "payment"

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        router.group("v1/store", context: AuthenticatedContext.self).addRoutes(routes)
        router.group("gena/v1/store", context: AuthenticatedContext.self).addRoutes(generationARoutes)
    }

    /// Signed-in users only, though the catalogue is the same for everyone.
    var routes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("item/list") { _, _ -> [StoreItemResponse] in
            try await postgres.withLiveConnection { try await records.items($0) }.map(StoreItemResponse.init)
        }
        routes.post("pay/validation") { request, context in BillingResponse(try await validate(request, context)) }
        return routes
    }

    /// Gen A (Lilac, docs/generation-a.md): the same validation, answered in Gen A's shape.
    var generationARoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post("pay/validation") { request, context in GenerationABilling(try await validate(request, context)) }
        return routes
    }

    private func validate(_ request: Request, _ context: AuthenticatedContext) async throws -> BillingRecord {
        let buyer = context.identity
        let body = try await request.decodeBody(as: ValidationBody.self, context: context)
        let impUID = try Self.reference(body.imp_uid, "imp_uid")
        let merchantUID = try Self.reference(body.merchant_uid, "merchant_uid")
        if try await postgres.withLiveConnection({ try await records.isBilled(impUID, $0) }) {
            throw APIError.paymentProcessed("imp_uid \(impUID) already billed")
        }
        guard let payment = try await portOne.payment(impUID) else { throw APIError.paymentProcessed("PortOne does not know \(impUID)") }
        let items = try await postgres.withLiveConnection { try await records.items($0) }
        let item = try Self.verify(payment, merchantUID: merchantUID, catalogue: items)
        let paidAt = payment.paid_at.flatMap { $0 > 0 ? Date(timeIntervalSince1970: TimeInterval($0)) : nil } ?? Date()
        let billing = BillingRecord(
            id: UUIDv7.generate(), impUID: impUID, merchantUID: merchantUID, buyer: buyer, item: item, paidAt: Timestamp.truncated(paidAt)
        )
        do {
            try await postgres.withLiveTransaction(logger: logger) { c in
                guard try await records.insert(billing, c) else { throw APIError.paymentProcessed("imp_uid \(impUID) billed concurrently") }
                let after = try await ledger.add(.credit, user: buyer, amount: item.coins, billing: billing.id, c)
                try await Outbox.append(
                    CloudEvent(
                        source: Self.source,
                        data: PaymentEvents.CoinsCredited(
                            billingId: billing.id, userId: buyer, amount: item.coins, balance: after.balance, version: after.version
                        )), on: c, logger: logger)
            }
        } catch let error where error.isUniqueViolation {
            throw APIError.paymentProcessed("imp_uid \(impUID) billed concurrently")
        }
        logger.info("payment credited", metadata: ["billing.id": "\(billing.id)", "user.id": "\(buyer)", "coins": "\(item.coins)"])
        return billing
    }

    /// `imp_uid` and `merchant_uid`: 100 characters (ASCII only, so 100 bytes).
    static let referenceLimit = TextLimit("reference", characters: 100, bytes: 100)

    /// A PortOne reference from the client: present, short, and URL-safe (else E11).
    static func reference(_ value: String?, _ name: String) throws -> String {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { throw APIError.badRequest("\(name) is required") }
        guard referenceLimit.allows(value),
            value.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-.".unicodeScalars.contains($0)) })
        else {
            throw APIError.badRequest("\(name) is malformed")
        }
        return value
    }

    /// The catalogue item `payment` bought, or E82 when it is not a completed, matching purchase.
    static func verify(_ payment: PortOnePayment, merchantUID: String, catalogue: [StoreItem]) throws -> StoreItem {
        guard payment.status == "paid" else { throw APIError.invalidPayment("status \(payment.status)") }
        guard payment.merchant_uid == merchantUID else { throw APIError.invalidPayment("merchant_uid differs from PortOne's") }
        guard let item = catalogue.first(where: { $0.item == payment.name }) else {
            throw APIError.invalidPayment("no catalogue item named \(payment.name ?? "nil")")
        }
        guard payment.amount == Double(item.price) else { throw APIError.invalidPayment("paid \(payment.amount) for \(item.item) priced \(item.price)") }
        return item
    }
}
