import Events
import Foundation
import Logging
import PostgresNIO

/// A service's own copy of user profiles, built from `auth.user.v1` (services never ask `auth`):
/// what member lists and message senders show. Events of one user arrive in order (keyed by user
/// id), so the latest one simply wins.
public enum ProfileProjection {
    /// The table, for the service's own migration (needs `pg_trgm` for the nickname index).
    public static let createTable = """
        CREATE TABLE user_profiles (
            user_id uuid PRIMARY KEY,
            email text NOT NULL,
            nickname text NOT NULL,
            profile_image text,
            deleted boolean NOT NULL DEFAULT false
        );
        CREATE INDEX user_profiles_email ON user_profiles (lower(email));
        CREATE INDEX user_profiles_nickname_trgm ON user_profiles USING gin (nickname gin_trgm_ops)
        """

    /// The legacy clients' view of a user (integer alias, `name#code` tag), for a later migration
    /// of a service that already has the table; null until the user's next profile event.
    public static let addLegacyColumns = """
        ALTER TABLE user_profiles ADD COLUMN alias bigint, ADD COLUMN user_code text;
        CREATE UNIQUE INDEX user_profiles_alias ON user_profiles (alias)
        """

    /// `user_id, email, nickname, profile_image` of the user in column `\(alias).user_id`, joined as
    /// `p`; a user whose profile event has not arrived yet shows empty strings rather than vanishing.
    public static func columns(userColumn: String) -> String {
        "\(userColumn), coalesce(p.email, ''), coalesce(p.nickname, ''), p.profile_image"
    }

    /// Adds the `auth.user.v1` handlers to a consumer's router.
    public static func register(into router: inout EventRouter) {
        router.on(AuthEvents.UserRegistered.self) { event, context in
            let user = event.data
            try await upsert(
                user.userId, email: user.email, nickname: user.nickname, profileImage: user.profileImage, alias: user.alias, code: user.code, context)
        }
        router.on(AuthEvents.UserProfileUpdated.self) { event, context in
            let user = event.data
            try await upsert(
                user.userId, email: user.email, nickname: user.nickname, profileImage: user.profileImage, alias: user.alias, code: user.code, context)
        }
        router.on(AuthEvents.UserDeleted.self) { event, context in
            _ = try await context.connection.query(
                "UPDATE user_profiles SET deleted = true WHERE user_id = \(event.data.userId.uuid)", logger: context.logger
            )
        }
    }

    /// Events written before aliases existed carry none: the stored alias and tag are kept.
    private static func upsert(
        _ user: UserID, email: String, nickname: String, profileImage: String?, alias: Int64?, code: String?, _ context: EventContext
    ) async throws {
        _ = try await context.connection.query(
            """
            INSERT INTO user_profiles (user_id, email, nickname, profile_image, alias, user_code)
            VALUES (\(user.uuid), \(email), \(nickname), \(profileImage), \(alias), \(code))
            ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, nickname = EXCLUDED.nickname, profile_image = EXCLUDED.profile_image,
                alias = coalesce(EXCLUDED.alias, user_profiles.alias), user_code = coalesce(EXCLUDED.user_code, user_profiles.user_code)
            """, logger: context.logger)
    }
}
