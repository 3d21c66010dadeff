import Events
import Foundation
import Logging
import PostgresNIO

/// The reads and writes Smooth's surface needs beyond the `/v1` ones, on the same stores and
/// tables: lookups by integer alias, the user's communities newest first, member rows with the
/// legacy columns and presence, category membership and invite reuse.

/// A community member as Smooth shows one: the projection's legacy columns (null until auth's
/// events carry them) and the presence projection's status.
struct SmoothMemberRecord: Sendable, Equatable {
    var userId: UserID
    var alias: Int64?
    var nickname: String
    var profileImage: String?
    var code: String?
    var online: Bool
}

extension WorkspaceStore {
    /// The active community with this alias when `user` is a member, locked when `lock`.
    func community(alias: Int64, member user: UserID, lock: Bool, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM workspaces w
                WHERE w.alias = \(alias) AND w.state = 'active' AND w.kind = 'community'
                  AND EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = \(user.uuid))
                \(unescaped: lock ? "FOR NO KEY UPDATE OF w" : "")
                """, logger: logger)
        ).first
    }

    /// The communities `user` belongs to, the most recently joined first (Smooth puts a new
    /// community at the head of the user's list).
    func communities(for user: UserID, _ c: PostgresConnection) async throws -> [WorkspaceRecord] {
        try await workspaces(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id
                WHERE m.user_id = \(user.uuid) AND w.state = 'active' AND w.kind = 'community'
                ORDER BY m.joined_at DESC, w.id
                """, logger: logger))
    }

    /// The members in the order they joined, with legacy columns and presence.
    func smoothMembers(of id: WorkspaceID, _ c: PostgresConnection) async throws -> [SmoothMemberRecord] {
        var result: [SmoothMemberRecord] = []
        let rows = try await c.query(
            """
            SELECT m.user_id, p.alias, coalesce(p.nickname, ''), p.profile_image, p.user_code, coalesce(s.online, false)
            FROM workspace_members m LEFT JOIN user_profiles p ON p.user_id = m.user_id LEFT JOIN presence s ON s.user_id = m.user_id
            WHERE m.workspace_id = \(id.uuid) ORDER BY m.joined_at, m.user_id
            """, logger: logger)
        for try await (user, alias, nickname, image, code, online) in rows.decode((UUID, Int64?, String, String?, String?, Bool).self) {
            result.append(SmoothMemberRecord(userId: UserID(user), alias: alias, nickname: nickname, profileImage: image, code: code, online: online))
        }
        return result
    }

    /// The members of the workspace among the users with these aliases (unknown aliases and
    /// non-members are left out).
    func members(of id: WorkspaceID, aliases: [Int64], _ c: PostgresConnection) async throws -> [Int64: UserID] {
        var result: [Int64: UserID] = [:]
        let rows = try await c.query(
            """
            SELECT p.alias, m.user_id FROM workspace_members m JOIN user_profiles p ON p.user_id = m.user_id
            WHERE m.workspace_id = \(id.uuid) AND p.alias = ANY(\(aliases))
            """, logger: logger)
        for try await (alias, user) in rows.decode((Int64, UUID).self) { result[alias] = UserID(user) }
        return result
    }

    /// The profile rows of `users` (legacy columns included), by user.
    func smoothProfiles(_ users: [UserID], _ c: PostgresConnection) async throws -> [UserID: SmoothMemberRecord] {
        var result: [UserID: SmoothMemberRecord] = [:]
        let rows = try await c.query(
            """
            SELECT p.user_id, p.alias, p.nickname, p.profile_image, p.user_code FROM user_profiles p
            WHERE p.user_id = ANY(\(users.map(\.uuid)))
            """, logger: logger)
        for try await (user, alias, nickname, image, code) in rows.decode((UUID, Int64?, String, String?, String?).self) {
            result[UserID(user)] = SmoothMemberRecord(userId: UserID(user), alias: alias, nickname: nickname, profileImage: image, code: code, online: false)
        }
        return result
    }

    /// The member who has belonged longest, other than `user` (who inherits a community its owner leaves).
    func longestMember(of id: WorkspaceID, other user: UserID, _ c: PostgresConnection) async throws -> UserID? {
        for try await member in try await c.query(
            """
            SELECT user_id FROM workspace_members WHERE workspace_id = \(id.uuid) AND user_id <> \(user.uuid)
            ORDER BY joined_at, user_id LIMIT 1
            """, logger: logger
        ).decode(UUID.self) {
            return UserID(member)
        }
        return nil
    }

    /// Whether the cover image at `path` is a community's icon (those are served without a token).
    func isCommunityIcon(_ path: String, _ c: PostgresConnection) async throws -> Bool {
        try await exists(
            c.query("SELECT 1 FROM workspaces WHERE cover_image = \(path) AND kind = 'community' AND state = 'active'", logger: logger))
    }
}

extension CategoryStore {
    /// The workspace of the category with this alias.
    func workspace(ofAlias alias: Int64, _ c: PostgresConnection) async throws -> WorkspaceID? {
        for try await id in try await c.query("SELECT workspace_id FROM categories WHERE alias = \(alias)", logger: logger).decode(UUID.self) {
            return WorkspaceID(id)
        }
        return nil
    }

    /// The private categories of the workspace `user` was given (its member list).
    func memberships(of user: UserID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> Set<CategoryID> {
        var result: Set<CategoryID> = []
        for try await id in try await c.query(
            """
            SELECT cm.category_id FROM category_members cm JOIN categories k ON k.id = cm.category_id
            WHERE k.workspace_id = \(workspace.uuid) AND cm.user_id = \(user.uuid)
            """, logger: logger
        ).decode(UUID.self) {
            result.insert(CategoryID(id))
        }
        return result
    }

    func members(of id: CategoryID, _ c: PostgresConnection) async throws -> [UserID] {
        var result: [UserID] = []
        for try await user in try await c.query("SELECT user_id FROM category_members WHERE category_id = \(id.uuid) ORDER BY user_id", logger: logger)
            .decode(UUID.self)
        {
            result.append(UserID(user))
        }
        return result
    }

    func addMembers(_ users: [UserID], to id: CategoryID, _ c: PostgresConnection) async throws {
        _ = try await c.query(
            """
            INSERT INTO category_members (category_id, user_id) SELECT \(id.uuid), u FROM unnest(\(users.map(\.uuid))::uuid[]) AS u
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// Takes `user` off the member lists of every category of the workspace.
    func removeFromAll(in workspace: WorkspaceID, user: UserID, _ c: PostgresConnection) async throws {
        _ = try await c.query(
            """
            DELETE FROM category_members cm USING categories k
            WHERE cm.category_id = k.id AND k.workspace_id = \(workspace.uuid) AND cm.user_id = \(user.uuid)
            """, logger: logger)
    }
}

extension ChannelStore {
    /// The workspace of the channel with this alias.
    func workspace(ofAlias alias: Int64, _ c: PostgresConnection) async throws -> WorkspaceID? {
        for try await id in try await c.query("SELECT workspace_id FROM channels WHERE alias = \(alias)", logger: logger).decode(UUID.self) {
            return WorkspaceID(id)
        }
        return nil
    }
}

extension InviteStore {
    /// The usable invite `creator` made for the workspace (Smooth hands each member one link).
    func usable(in workspace: WorkspaceID, createdBy creator: UserID, _ c: PostgresConnection) async throws -> InviteRecord? {
        try await invites(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites
                WHERE workspace_id = \(workspace.uuid) AND created_by = \(creator.uuid) AND NOT revoked
                  AND (expires_at IS NULL OR expires_at > clock_timestamp()) AND (max_uses IS NULL OR uses < max_uses)
                ORDER BY created_at, code LIMIT 1
                """, logger: logger)
        ).first
    }

    /// The unrevoked invite with this alias, wherever it is.
    func find(alias: Int64, _ c: PostgresConnection) async throws -> InviteRecord? {
        try await invites(c.query("SELECT \(unescaped: Self.columns) FROM invites WHERE alias = \(alias) AND NOT revoked", logger: logger)).first
    }
}
