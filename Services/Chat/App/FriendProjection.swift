import Database
import Events
import Foundation
import PostgresNIO

/// `auth.user.v1`'s `FriendshipChanged` → chat's `friendships` table: personal rooms are opened
/// between friends only. Auth publishes one event per side, keyed by that side's user, so each
/// row follows its own ordered stream; `removed` deletes the row.
enum FriendProjection {
    static func register(into router: inout EventRouter) {
        router.on(AuthEvents.FriendshipChanged.self) { event, context in
            let e = event.data
            if e.state == .removed {
                _ = try await context.connection.query(
                    "DELETE FROM friendships WHERE user_id = \(e.userId.uuid) AND friend_id = \(e.friendId.uuid)", logger: context.logger)
            } else {
                _ = try await context.connection.query(
                    """
                    INSERT INTO friendships (user_id, friend_id, state) VALUES (\(e.userId.uuid), \(e.friendId.uuid), \(e.state.rawValue))
                    ON CONFLICT (user_id, friend_id) DO UPDATE SET state = EXCLUDED.state
                    """, logger: context.logger)
            }
        }
    }
}
