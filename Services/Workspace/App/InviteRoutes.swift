import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// Discord-style invite codes (client contract §2.1), in the /v1 conventions: any member may
/// create one (default: valid 7 days, unlimited uses); the owner lists and revokes them (the
/// creator may revoke their own); anyone signed in joins with `POST /v1/invites/{code}`. A code
/// that is unknown, revoked, expired or used up is E13, whichever it is.
extension WorkspaceAPI {
    static let defaultInviteLifetime = 7 * 24 * 3600
    static let maxInviteLifetime = 30 * 24 * 3600
    static let maxInviteUses = 10_000

    /// A workspace's codes; mounted at `/v1/workspaces/{id}/invites`.
    var workspaceInviteRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post { request, context -> InviteResponse in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let body = try await request.decodeBody(as: InviteBody.self, context: context)
            let lifetime = body.expiresInSeconds ?? Self.defaultInviteLifetime
            guard (60...Self.maxInviteLifetime).contains(lifetime) else { throw APIError.badRequest("expiresInSeconds must be 60 to 2592000") }
            if let maxUses = body.maxUses, !(1...Self.maxInviteUses).contains(maxUses) { throw APIError.badRequest("maxUses must be 1 to 10000") }
            return InviteResponse(
                try await write { c in
                    _ = try await requireMember(id, me, c, lock: true)
                    return try await invites.insert(workspace: id, creator: me, maxUses: body.maxUses, expiresInSeconds: lifetime, c)
                })
        }
        routes.get { request, context -> [InviteResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                _ = try await requireOwner(id, me, c)
                return try await invites.list(in: id, c).map(InviteResponse.init)
            }
        }
        routes.delete(":code") { request, context -> HTTPResponse.Status in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let code = context.parameters.get("code") ?? ""
            try await write { c in
                let workspace = try await requireMember(id, me, c, lock: true)
                guard let invite = try await invites.find(code, in: id, c) else { throw APIError.notFound("invite") }
                guard workspace.ownerId == me || invite.createdBy == me else { throw APIError.forbidden("not the owner or the invite's creator") }
                try await invites.revoke(code, c)
            }
            return .ok
        }
        return routes
    }

    /// Joining with a code; mounted at `/v1/invites`.
    var inviteRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post(":code") { request, context -> WorkspaceResponse in
            let me = context.identity
            let code = context.parameters.get("code") ?? ""
            return WorkspaceResponse(
                try await write { c in
                    // Workspace row first, then the invite: the same lock order as every other path.
                    guard let workspaceId = try await invites.workspace(of: code, c),
                        let workspace = try await workspaces.lock(workspaceId, c),
                        try await invites.lockUsable(code, c) != nil
                    else { throw APIError.notFound("invite") }
                    try await join(me, workspace: workspace.id, via: .inviteCode, c)
                    try await invites.use(code, c)
                    return workspace
                })
        }
        return routes
    }
}
