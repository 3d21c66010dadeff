import Events
import Foundation
import Logging
import PostgresNIO

/// SQL of channels and channel membership. Channels are always looked up within their
/// workspace, so an id from another workspace is simply not found.
struct ChannelStore: Sendable {
    let logger: Logger

    static let columns =
        "c.id, c.workspace_id, c.category_id, c.name, c.description, c.cover_image, c.owner_id, c.is_default, c.created_at, c.alias, c.type, c.public, c.parent_id"
    /// Channels in layout order: by category position, then channel position (the query joins
    /// `categories k`).
    static let layoutOrder = "ORDER BY k.position, c.position, c.id"
    static let withCategory = "JOIN categories k ON k.id = c.category_id"

    func channels(_ rows: PostgresRowSequence) async throws -> [ChannelRecord] {
        var result: [ChannelRecord] = []
        for try await (id, workspace, category, name, description, cover, owner, isDefault, createdAt, alias, type, isPublic, parent)
            in rows.decode((UUID, UUID, UUID, String, String?, String?, UUID, Bool, Date, Int64, String, Bool, UUID?).self)
        {
            result.append(
                ChannelRecord(
                    id: ChannelID(id), workspaceId: WorkspaceID(workspace), categoryId: CategoryID(category), name: name,
                    description: description, coverImage: cover, ownerId: UserID(owner), isDefault: isDefault, createdAt: createdAt,
                    alias: alias, type: ChannelType(rawValue: type) ?? .text, isPublic: isPublic, parentId: parent.map(ChannelID.init)
                ))
        }
        return result
    }

    /// Every channel of the workspace, threads included (membership and ownership sweeps need
    /// them; lists shown to clients filter them out).
    func all(in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> [ChannelRecord] {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c \(unescaped: Self.withCategory)
                WHERE c.workspace_id = \(workspace.uuid) \(unescaped: Self.layoutOrder)
                """, logger: logger))
    }

    func mine(in workspace: WorkspaceID, user: UserID, _ c: PostgresConnection) async throws -> [ChannelRecord] {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c \(unescaped: Self.withCategory) JOIN channel_members m ON m.channel_id = c.id
                WHERE c.workspace_id = \(workspace.uuid) AND m.user_id = \(user.uuid) \(unescaped: Self.layoutOrder)
                """, logger: logger))
    }

    func search(in workspace: WorkspaceID, pattern: String, _ c: PostgresConnection) async throws -> [ChannelRecord] {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c \(unescaped: Self.withCategory)
                WHERE c.workspace_id = \(workspace.uuid) AND c.parent_id IS NULL AND c.name ILIKE \(pattern)
                \(unescaped: Self.layoutOrder)
                """, logger: logger))
    }

    func find(_ id: ChannelID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> ChannelRecord? {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c WHERE c.id = \(id.uuid) AND c.workspace_id = \(workspace.uuid)
                """, logger: logger)
        ).first
    }

    func defaultChannel(in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> ChannelRecord? {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c WHERE c.workspace_id = \(workspace.uuid) AND c.is_default
                """, logger: logger)
        ).first
    }

    /// The channels of a category in order (threads follow their channel, they have no place).
    func inCategory(_ category: CategoryID, _ c: PostgresConnection) async throws -> [ChannelRecord] {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c WHERE c.category_id = \(category.uuid) AND c.parent_id IS NULL
                ORDER BY c.position, c.id
                """, logger: logger))
    }

    /// Inserts a channel at the end of `category` (a thread under `parent`); nil when the name is
    /// taken in the workspace among channels of its type (a thread's among its parent's threads).
    func insert(
        _ id: ChannelID, workspace: WorkspaceID, category: CategoryID, name: String, description: String?, coverImage: String?,
        owner: UserID, isDefault: Bool, type: ChannelType = .text, isPublic: Bool = true, parent: ChannelID? = nil, _ c: PostgresConnection
    ) async throws -> ChannelRecord? {
        try await channels(
            c.query(
                """
                INSERT INTO channels AS c (id, workspace_id, category_id, position, name, description, cover_image, owner_id, is_default, type, public,
                                           parent_id)
                VALUES (\(id.uuid), \(workspace.uuid), \(category.uuid),
                        (SELECT coalesce(max(position) + 1, 0) FROM channels WHERE category_id = \(category.uuid)),
                        \(name), \(description), \(coverImage), \(owner.uuid), \(isDefault), \(type.rawValue), \(isPublic), \(parent?.uuid))
                ON CONFLICT DO NOTHING
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func update(_ id: ChannelID, name: String, description: String?, coverImage: String?, _ c: PostgresConnection) async throws -> ChannelRecord? {
        try await channels(
            c.query(
                """
                UPDATE channels c SET name = \(name), description = \(description), cover_image = \(coverImage)
                WHERE c.id = \(id.uuid) RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func setOwner(_ id: ChannelID, _ owner: UserID, _ c: PostgresConnection) async throws -> ChannelRecord? {
        try await channels(
            c.query(
                """
                UPDATE channels c SET owner_id = \(owner.uuid) WHERE c.id = \(id.uuid) RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func delete(_ id: ChannelID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM channels WHERE id = \(id.uuid)", logger: logger)
    }

    /// Sets the order (and category) of `ids`: position = index in the array. Their threads
    /// follow them into the category.
    func place(_ ids: [ChannelID], in category: CategoryID, _ c: PostgresConnection) async throws {
        _ = try await c.query(
            """
            UPDATE channels c SET category_id = \(category.uuid), position = t.ord - 1
            FROM unnest(\(ids.map(\.uuid))::uuid[]) WITH ORDINALITY AS t(id, ord) WHERE c.id = t.id
            """, logger: logger)
        _ = try await c.query(
            """
            UPDATE channels SET category_id = \(category.uuid)
            WHERE parent_id = ANY(\(ids.map(\.uuid))::uuid[]) AND category_id <> \(category.uuid)
            """, logger: logger)
    }

    /// The threads of a channel, oldest first.
    func threads(of parent: ChannelID, _ c: PostgresConnection) async throws -> [ChannelRecord] {
        try await channels(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM channels c WHERE c.parent_id = \(parent.uuid) ORDER BY c.created_at, c.id
                """, logger: logger))
    }

    /// Makes the members of `parent` the members of `thread`; returns who was added.
    func copyMembers(from parent: ChannelID, to thread: ChannelID, _ c: PostgresConnection) async throws -> [UserID] {
        var added: [UserID] = []
        for try await user in try await c.query(
            """
            INSERT INTO channel_members (channel_id, user_id)
            SELECT \(thread.uuid), user_id FROM channel_members WHERE channel_id = \(parent.uuid) ORDER BY joined_at, user_id
            ON CONFLICT DO NOTHING RETURNING user_id
            """, logger: logger
        ).decode(UUID.self) {
            added.append(UserID(user))
        }
        return added
    }

    // MARK: members

    func members(of id: ChannelID, _ c: PostgresConnection) async throws -> [MemberRecord] {
        try await WorkspaceStore.members(
            c.query(
                """
                SELECT \(unescaped: WorkspaceStore.memberColumns) FROM channel_members m LEFT JOIN user_profiles p ON p.user_id = m.user_id
                WHERE m.channel_id = \(id.uuid) ORDER BY m.joined_at, m.user_id
                """, logger: logger))
    }

    func isMember(_ id: ChannelID, _ user: UserID, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query("SELECT 1 FROM channel_members WHERE channel_id = \(id.uuid) AND user_id = \(user.uuid)", logger: logger) {
            return true
        }
        return false
    }

    /// Adds a member; false when already one.
    func addMember(_ id: ChannelID, _ user: UserID, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            INSERT INTO channel_members (channel_id, user_id) VALUES (\(id.uuid), \(user.uuid)) ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    func removeMember(_ id: ChannelID, _ user: UserID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM channel_members WHERE channel_id = \(id.uuid) AND user_id = \(user.uuid)", logger: logger)
    }

    /// Removes `user` from every channel of the workspace; returns the channels left.
    func removeFromAll(in workspace: WorkspaceID, user: UserID, _ c: PostgresConnection) async throws -> [ChannelID] {
        var left: [ChannelID] = []
        for try await id in try await c.query(
            """
            DELETE FROM channel_members m USING channels c
            WHERE m.channel_id = c.id AND c.workspace_id = \(workspace.uuid) AND m.user_id = \(user.uuid)
            RETURNING m.channel_id
            """, logger: logger
        ).decode(UUID.self) {
            left.append(ChannelID(id))
        }
        return left.sorted()
    }

    /// How many channels of the workspace `user` owns.
    func ownedCount(in workspace: WorkspaceID, user: UserID, _ c: PostgresConnection) async throws -> Int {
        for try await count in try await c.query(
            """
            SELECT count(*) FROM channels WHERE workspace_id = \(workspace.uuid) AND owner_id = \(user.uuid)
            """, logger: logger
        ).decode(Int64.self) {
            return Int(count)
        }
        return 0
    }
}
