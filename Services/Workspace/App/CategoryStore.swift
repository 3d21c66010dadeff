import Events
import Foundation
import Logging
import PostgresNIO

/// SQL of categories (the Discord-style grouping of channels). Order is kept as a dense
/// `position` per workspace; moves rewrite the positions of one list in one statement.
struct CategoryStore: Sendable {
    let logger: Logger

    static let columns = "id, name, alias, public"

    func categories(_ rows: PostgresRowSequence) async throws -> [CategoryRecord] {
        var result: [CategoryRecord] = []
        for try await (id, name, alias, isPublic) in rows.decode((UUID, String, Int64, Bool).self) {
            result.append(CategoryRecord(id: CategoryID(id), name: name, alias: alias, isPublic: isPublic))
        }
        return result
    }

    func all(in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> [CategoryRecord] {
        try await categories(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM categories WHERE workspace_id = \(workspace.uuid) ORDER BY position, id
                """, logger: logger))
    }

    func find(_ id: CategoryID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> CategoryRecord? {
        try await categories(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM categories WHERE id = \(id.uuid) AND workspace_id = \(workspace.uuid)
                """, logger: logger)
        ).first
    }

    /// Inserts a category at the end of the workspace's list.
    func insert(
        _ id: CategoryID, workspace: WorkspaceID, name: String, isPublic: Bool = true, _ c: PostgresConnection
    ) async throws -> CategoryRecord {
        let rows = try await categories(
            c.query(
                """
                INSERT INTO categories (id, workspace_id, name, position, public)
                VALUES (\(id.uuid), \(workspace.uuid), \(name),
                        (SELECT coalesce(max(position) + 1, 0) FROM categories WHERE workspace_id = \(workspace.uuid)), \(isPublic))
                RETURNING \(unescaped: Self.columns)
                """, logger: logger))
        guard let category = rows.first else { throw PostgresStoreError("category insert returned no row") }
        return category
    }

    func rename(_ id: CategoryID, name: String, _ c: PostgresConnection) async throws -> CategoryRecord? {
        try await categories(
            c.query("UPDATE categories SET name = \(name) WHERE id = \(id.uuid) RETURNING \(unescaped: Self.columns)", logger: logger)
        ).first
    }

    func delete(_ id: CategoryID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM categories WHERE id = \(id.uuid)", logger: logger)
    }

    /// Sets the order of the workspace's categories: position = index in the array.
    func place(_ ids: [CategoryID], _ c: PostgresConnection) async throws {
        _ = try await c.query(
            """
            UPDATE categories k SET position = t.ord - 1
            FROM unnest(\(ids.map(\.uuid))::uuid[]) WITH ORDINALITY AS t(id, ord) WHERE k.id = t.id
            """, logger: logger)
    }
}

/// A query that should always return a row did not: a bug, reported as E99.
struct PostgresStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
