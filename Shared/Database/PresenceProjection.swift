import Events
import Foundation
import PostgresNIO

/// A service's own copy of who is online, built from `presence.v1` (what Smooth's member and room
/// lists show as `status` / `state`). Events of one user arrive in order (keyed by user id); an
/// older one never overwrites a newer status.
public enum PresenceProjection {
    /// The table, for the service's own migration.
    public static let createTable = """
        CREATE TABLE presence (
            user_id uuid PRIMARY KEY,
            online boolean NOT NULL,
            last_seen timestamptz NOT NULL
        )
        """

    /// Adds the `presence.v1` handler to a consumer's router.
    public static func register(into router: inout EventRouter) {
        router.on(PresenceEvents.StatusChanged.self) { event, context in
            let e = event.data
            _ = try await context.connection.query(
                """
                INSERT INTO presence AS s (user_id, online, last_seen) VALUES (\(e.userId.uuid), \(e.status == .online), \(e.lastSeen))
                ON CONFLICT (user_id) DO UPDATE SET online = EXCLUDED.online, last_seen = EXCLUDED.last_seen
                WHERE s.last_seen <= EXCLUDED.last_seen
                """, logger: context.logger)
        }
    }
}
