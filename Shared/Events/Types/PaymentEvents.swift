import Foundation

/// `payment.v1`, keyed by user id: coin ledger outcomes. The debit replies answer a
/// `WorkspaceEvents.CoinDebitRequested` by its `requestId`; a refund answers a
/// `WorkspaceEvents.CoinRefundRequested`.
///
/// Every event carries the user's balance after it and the balance's `version` (a per-user
/// counter bumped by every ledger entry), so a projection applies an event only when its version
/// is newer than what it holds.
public enum PaymentEvents {
    /// Coins bought in the store (a validated PortOne payment).
    public struct CoinsCredited: EventPayload {
        public static let eventType = "payment.coins.credited"
        public static let topic = Topic.payment
        public var billingId: UUID
        public var userId: UserID
        public var amount: Int
        public var balance: Int
        public var version: Int64
        public var subject: String { userId.description }

        public init(billingId: UUID, userId: UserID, amount: Int, balance: Int, version: Int64) {
            self.billingId = billingId
            self.userId = userId
            self.amount = amount
            self.balance = balance
            self.version = version
        }

        enum CodingKeys: String, CodingKey { case billingId, userId, amount, balance, version }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeLowercased(billingId, forKey: .billingId)
            try c.encode(userId, forKey: .userId)
            try c.encode(amount, forKey: .amount)
            try c.encode(balance, forKey: .balance)
            try c.encode(version, forKey: .version)
        }
    }

    public struct CoinsDebited: EventPayload {
        public static let eventType = "payment.coins.debited"
        public static let topic = Topic.payment
        public var requestId: CoinRequestID
        /// The workspace of the request, echoed so the requester can act without state (a refund).
        public var workspaceId: WorkspaceID
        public var userId: UserID
        public var amount: Int
        /// The balance after the debit.
        public var balance: Int
        public var version: Int64
        public var subject: String { userId.description }

        public init(requestId: CoinRequestID, workspaceId: WorkspaceID, userId: UserID, amount: Int, balance: Int, version: Int64) {
            self.requestId = requestId
            self.workspaceId = workspaceId
            self.userId = userId
            self.amount = amount
            self.balance = balance
            self.version = version
        }
    }

    public struct CoinDebitRejected: EventPayload {
        public enum Reason: String, Codable, Sendable {
            case insufficientCoins = "insufficient-coins"
            case invalidAmount = "invalid-amount"
        }
        public static let eventType = "payment.coins.debit-rejected"
        public static let topic = Topic.payment
        public var requestId: CoinRequestID
        public var userId: UserID
        public var amount: Int
        public var reason: Reason
        /// The (unchanged) balance when the request was decided.
        public var balance: Int
        public var version: Int64
        public var subject: String { userId.description }

        public init(requestId: CoinRequestID, userId: UserID, amount: Int, reason: Reason, balance: Int, version: Int64) {
            self.requestId = requestId
            self.userId = userId
            self.amount = amount
            self.reason = reason
            self.balance = balance
            self.version = version
        }
    }

    /// The coins of a debit given back (its workspace was never created).
    public struct CoinsRefunded: EventPayload {
        public static let eventType = "payment.coins.refunded"
        public static let topic = Topic.payment
        public var requestId: CoinRequestID
        public var userId: UserID
        public var amount: Int
        public var balance: Int
        public var version: Int64
        public var subject: String { userId.description }

        public init(requestId: CoinRequestID, userId: UserID, amount: Int, balance: Int, version: Int64) {
            self.requestId = requestId
            self.userId = userId
            self.amount = amount
            self.balance = balance
            self.version = version
        }
    }
}
