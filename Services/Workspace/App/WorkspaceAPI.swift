import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit
import Uploads

/// What every route of the workspace service shares: the stores, the image volume, and the
/// access rules. Routes live in extensions by resource (workspaces, channels, categories, invites).
///
/// Access rules (client contract §1.3, §1.4): a workspace a user is not a member of does not
/// exist for them (E13, never data); owner-only actions by other members are E14. Every mutation
/// runs in one transaction that first locks the workspace row, so changes to one workspace are
/// serialised and its events leave the outbox in the order they happened.
struct WorkspaceAPI: Sendable {
    let postgres: PostgresClient
    let workspaces: WorkspaceStore
    let channels: ChannelStore
    let categories: CategoryStore
    let invites: InviteStore
    let images: ImageDirectory
    let settings: WorkspaceSettings
    let saga: CreationSaga
    let logger: Logger

    static let source = "workspace"

    /// Every route acts for the signed-in user: all of them are mounted in one group whose
    /// context carries the identity.
    func add(to router: some RouterMethods<SuiteRequestContext>) {
        let v1 = router.group("v1", context: AuthenticatedContext.self)
        v1.addRoutes(workspaceRoutes, atPath: "workspaces")
        v1.addRoutes(channelRoutes, atPath: "workspaces/:workspace")
        v1.addRoutes(categoryRoutes, atPath: "workspaces/:workspace")
        v1.addRoutes(workspaceInviteRoutes, atPath: "workspaces/:workspace/invites")
        v1.addRoutes(inviteRoutes, atPath: "invites")
        v1.addRoutes(coverRoutes, atPath: "static/workspaces")
        router.group("gena/v1", context: AuthenticatedContext.self).addRoutes(generationARoutes, atPath: "workspaces")
        addSmoothRoutes(to: router)
    }

    // MARK: request helpers

    func pathID<Entity>(_ context: AuthenticatedContext, _ name: String) throws -> Identifier<Entity> { try context.pathID(name) }

    /// Runs reads on one pooled connection.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await postgres.withLiveConnection { try await body($0) }
    }

    /// Runs a mutation in one transaction; a unique violation that escapes it is a lost race on a
    /// name or membership, i.e. E12.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await postgres.withLiveTransaction(logger: logger) { try await body($0) }
        } catch let error where error.isUniqueViolation {
            throw APIError.duplicate("unique violation")
        }
    }

    /// The active workspace when `user` is a member (locked when `lock`), else E13.
    func requireMember(_ id: WorkspaceID, _ user: UserID, _ c: PostgresConnection, lock: Bool = false) async throws -> WorkspaceRecord {
        guard let workspace = try await workspaces.find(id, member: user, lock: lock, c) else { throw APIError.notFound("workspace") }
        return workspace
    }

    /// As `requireMember`, and E14 unless `user` owns the workspace.
    func requireOwner(_ id: WorkspaceID, _ user: UserID, _ c: PostgresConnection, lock: Bool = false) async throws -> WorkspaceRecord {
        let workspace = try await requireMember(id, user, c, lock: lock)
        guard workspace.ownerId == user else { throw APIError.forbidden("not the workspace owner") }
        return workspace
    }

    /// Appends an event to the outbox in the caller's transaction.
    func emit<P: EventPayload>(_ payload: P, _ c: PostgresConnection) async throws {
        try await Outbox.append(CloudEvent(source: Self.source, data: payload), on: c, logger: logger)
    }

    /// Parses `owner_id` of a transfer body (E11 when missing or not an id).
    func newOwner(_ request: Request, _ context: AuthenticatedContext) async throws -> UserID {
        let body = try await request.decodeBody(as: OwnerBody.self, context: context)
        guard let id = body.owner_id.flatMap(UserID.init) else { throw APIError.badRequest("owner_id is required") }
        return id
    }
}
