import Database
import Events
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import Uploads

/// What the workspace service consumes, each applied through the inbox (once per event).
extension WorkspaceAPI {
    /// `auth.user.v1` → the member-profile projection (what member lists show).
    var profileProjection: EventRouter {
        var router = EventRouter()
        ProfileProjection.register(into: &router)
        return router
    }

    /// `payment.v1` → the coin saga's replies: activate or discard the pending workspace, then
    /// notify the waiting request (delivered at commit). Repeated replies find no pending
    /// workspace and change nothing. A debit whose request no workspace holds any more (the
    /// pending row was removed before the answer came) would be a lost coin: it is given back
    /// with a `workspace.coin-refund-requested`, in the same transaction.
    var sagaReplies: EventRouter {
        var router = EventRouter()
        let api = self
        router.on(PaymentEvents.CoinsDebited.self) { event, context in
            let c = context.connection
            let debit = event.data
            guard let workspace = try await api.workspaces.activate(debitRequest: debit.requestId, c) else {
                if try await !api.workspaces.holdsDebit(debit.requestId, c) {
                    try await api.emit(WorkspaceEvents.CoinRefundRequested(requestId: debit.requestId, workspaceId: debit.workspaceId, userId: debit.userId), c)
                }
                return
            }
            guard let channel = try await api.channels.defaultChannel(in: workspace.id, c) else {
                throw PostgresStoreError("pending workspace \(workspace.id) has no default channel")
            }
            try await api.emitCreated(workspace, .workspace, defaultChannel: channel, c)
            try await CreationSaga.notify(workspace.id, c, logger: context.logger)
        }
        router.on(PaymentEvents.CoinDebitRejected.self) { event, context in
            let c = context.connection
            guard let workspace = try await api.workspaces.discard(debitRequest: event.data.requestId, c) else { return }
            try await CreationSaga.notify(workspace.id, c, logger: context.logger)
            api.images.remove(workspace.coverImage)
        }
        return router
    }
}
