import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// The payment side of the workspace-creation coin saga, consuming `workspace.v1` through the
/// inbox: each handler's ledger change, decision and reply (outbox) commit together, so a crash
/// anywhere leaves either nothing (the request is redelivered) or the whole decision (the relay
/// publishes the reply after restart).
struct CoinSaga: Sendable {
    let ledger: CoinLedger
    let requests: DebitRequests
    let logger: Logger

    var router: EventRouter {
        var router = EventRouter()
        let saga = self
        router.on(WorkspaceEvents.CoinDebitRequested.self) { event, context in
            try await saga.decide(event.data, context.connection)
        }
        router.on(WorkspaceEvents.CoinRefundRequested.self) { event, context in
            try await saga.refund(event.data, context.connection)
        }
        return router
    }

    /// Debits the requested coins, or rejects the request when the balance is too low or the
    /// amount is not positive. A request decided before (same `requestId`) changes nothing.
    func decide(_ request: WorkspaceEvents.CoinDebitRequested, _ c: PostgresConnection) async throws {
        guard try await requests.claim(request, c) else { return }
        if request.amount > 0, let after = try await ledger.debit(user: request.userId, amount: request.amount, request: request.requestId, c) {
            try await emit(
                PaymentEvents.CoinsDebited(
                    requestId: request.requestId, workspaceId: request.workspaceId, userId: request.userId, amount: request.amount,
                    balance: after.balance, version: after.version
                ), c)
            return
        }
        try await requests.markRejected(request.requestId, c)
        let current = try await ledger.balance(of: request.userId, c)
        try await emit(
            PaymentEvents.CoinDebitRejected(
                requestId: request.requestId, userId: request.userId, amount: request.amount,
                reason: request.amount > 0 ? .insufficientCoins : .invalidAmount, balance: current.balance, version: current.version
            ), c)
    }

    /// Gives back the coins of the debit of `requestId`, once; nothing when it was never debited
    /// (rejected or unknown) or is already refunded.
    func refund(_ request: WorkspaceEvents.CoinRefundRequested, _ c: PostgresConnection) async throws {
        guard let debit = try await ledger.refundableDebit(request.requestId, c) else { return }
        let after = try await ledger.add(.refund, user: debit.user, amount: debit.amount, request: request.requestId, c)
        try await emit(
            PaymentEvents.CoinsRefunded(
                requestId: request.requestId, userId: debit.user, amount: debit.amount, balance: after.balance, version: after.version
            ), c)
        logger.info("coin debit refunded", metadata: ["coin.request": "\(request.requestId)", "user.id": "\(debit.user)"])
    }

    private func emit<P: EventPayload>(_ payload: P, _ c: PostgresConnection) async throws {
        try await Outbox.append(CloudEvent(source: StoreRoutes.source, data: payload), on: c, logger: logger)
    }
}
