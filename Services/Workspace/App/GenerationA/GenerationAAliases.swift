import Events
import Foundation
import Logging
import PostgresNIO

/// Gen A names workspaces and users by integer alias and channels by name; these translate both
/// ways against the workspace database. A name or alias that names nothing gives nil (the caller
/// answers as Gen B does for an unknown id: E13).
struct GenerationAAliases: Sendable {
    let logger: Logger

    func workspace(alias: Int64, _ c: PostgresConnection) async throws -> WorkspaceID? {
        for try await id in try await c.query(
            "SELECT id FROM workspaces WHERE alias = \(alias) AND kind = 'workspace'", logger: logger
        ).decode(UUID.self) {
            return WorkspaceID(id)
        }
        return nil
    }

    /// The text channel (not a thread) of the workspace with this name (names are unique per
    /// workspace regardless of case).
    func channel(named name: String, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> ChannelID? {
        for try await id in try await c.query(
            """
            SELECT id FROM channels
            WHERE workspace_id = \(workspace.uuid) AND type = 'TEXT' AND parent_id IS NULL AND lower(name) = lower(\(name))
            """, logger: logger
        ).decode(UUID.self) {
            return ChannelID(id)
        }
        return nil
    }

    func user(alias: Int64, _ c: PostgresConnection) async throws -> UserID? {
        for try await id in try await c.query("SELECT user_id FROM user_profiles WHERE alias = \(alias)", logger: logger).decode(UUID.self) {
            return UserID(id)
        }
        return nil
    }

    /// The aliases of the workspaces, channels and users an answer names.
    func book(workspaces: [WorkspaceID], channels: [ChannelID], users: [UserID], _ c: PostgresConnection) async throws -> AliasBook {
        var book = AliasBook()
        if !workspaces.isEmpty {
            for try await (id, alias) in try await c.query(
                "SELECT id, alias FROM workspaces WHERE id = ANY(\(workspaces.map(\.uuid))::uuid[])", logger: logger
            ).decode((UUID, Int64).self) {
                book.workspaces[WorkspaceID(id)] = alias
            }
        }
        if !channels.isEmpty {
            for try await (id, alias) in try await c.query(
                "SELECT id, alias FROM channels WHERE id = ANY(\(channels.map(\.uuid))::uuid[])", logger: logger
            ).decode((UUID, Int64).self) {
                book.channels[ChannelID(id)] = alias
            }
        }
        if !users.isEmpty {
            for try await (id, alias) in try await c.query(
                "SELECT user_id, alias FROM user_profiles WHERE user_id = ANY(\(users.map(\.uuid))::uuid[]) AND alias IS NOT NULL", logger: logger
            ).decode((UUID, Int64).self) {
                book.users[UserID(id)] = alias
            }
        }
        return book
    }
}

/// Aliases by id, for one answer.
struct AliasBook: Sendable {
    var workspaces: [WorkspaceID: Int64] = [:]
    var channels: [ChannelID: Int64] = [:]
    var users: [UserID: Int64] = [:]
}
