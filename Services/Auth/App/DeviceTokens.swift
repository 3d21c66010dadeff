import Database
import Events
import Foundation
import PostgresNIO

/// Device tokens (for push) and their events on `auth.user.v1`: the table and the events change
/// in one transaction, so the push service's view never misses or invents a token.
extension AccountRoutes {
    /// Devices a user is signed in on at most; registering one more drops the least recently
    /// registered (phones, tablets and reinstalls stay far below it).
    static let maxDeviceTokensPerUser = 10

    /// Gives `token` to the user; an event only when it is new for the user (a login repeating
    /// the device's token is none), and a removal for the user it was taken from.
    func registerDeviceToken(_ token: String, for user: UserID) async throws {
        try await postgres.withLiveTransaction(logger: logger) { connection in
            let (added, previousOwner) = try await store.claimDeviceToken(token, for: user, on: connection)
            let now = Date()
            if let previousOwner {
                let removed = AuthEvents.DeviceTokensRemoved(userId: previousOwner, tokens: [token], removedAt: now)
                try await Outbox.append(CloudEvent(source: Self.source, data: removed), on: connection, logger: logger)
            }
            if added {
                let event = AuthEvents.DeviceTokenAdded(userId: user, token: token, addedAt: now)
                try await Outbox.append(CloudEvent(source: Self.source, data: event), on: connection, logger: logger)
                let dropped = try await store.trimDeviceTokens(for: user, keeping: Self.maxDeviceTokensPerUser, on: connection)
                if !dropped.isEmpty {
                    let removed = AuthEvents.DeviceTokensRemoved(userId: user, tokens: dropped, removedAt: now)
                    try await Outbox.append(CloudEvent(source: Self.source, data: removed), on: connection, logger: logger)
                }
            }
        }
    }

    /// Logout: the user's devices get no more pushes for them.
    func removeDeviceTokens(of user: UserID) async throws {
        try await postgres.withLiveTransaction(logger: logger) { connection in
            let removed = try await store.removeDeviceTokens(for: user, on: connection)
            guard !removed.isEmpty else { return }
            let event = AuthEvents.DeviceTokensRemoved(userId: user, tokens: removed, removedAt: Date())
            try await Outbox.append(CloudEvent(source: Self.source, data: event), on: connection, logger: logger)
        }
    }
}
