import Foundation

/// `payment.v1`, keyed by user id: coin ledger outcomes. The debit replies answer a
/// `WorkspaceEvents.CoinDebitRequested` by its `requestId`.
public enum PaymentEvents {
    public struct CoinsDebited: EventPayload {
        public static let eventType = "payment.coins.debited"
        public static let topic = Topic.payment
        public var requestId: CoinRequestID
        public var userId: UserID
        public var amount: Int
        /// The balance after the debit.
        public var balance: Int
        public var subject: String { userId.description }

        public init(requestId: CoinRequestID, userId: UserID, amount: Int, balance: Int) {
            self.requestId = requestId
            self.userId = userId
            self.amount = amount
            self.balance = balance
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
        public var balance: Int
        public var subject: String { userId.description }

        public init(requestId: CoinRequestID, userId: UserID, amount: Int, reason: Reason, balance: Int) {
            self.requestId = requestId
            self.userId = userId
            self.amount = amount
            self.reason = reason
            self.balance = balance
        }
    }
}
