import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// `/community-server/community/invitation` and `/community/{id}/invitation`: Smooth's invitation
/// links on the shared invite codes. As Smooth did, each member has one link per community
/// (asking again returns it), links neither expire nor run out, any member lists them, and
/// only the owner revokes one.
extension WorkspaceAPI {
    /// Mounted at `/smooth/community/community`.
    var smoothInvitationRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post("invitation") { request, context -> SmoothResponse<SmoothInvitationLink> in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothIdBody.self, context: context)
            let invite = try await smoothWrite { c in
                let community = try await requireCommunity(body.id, me, c, lock: true)
                if let existing = try await invites.usable(in: community.id, createdBy: me, c) { return existing }
                return try await invites.insert(workspace: community.id, creator: me, maxUses: nil, expiresInSeconds: nil, c)
            }
            return SmoothResponse(SmoothInvitationLink(url: links(request).invitation(invite.code)))
        }
        routes.get(":community/invitation") { request, context -> SmoothResponse<SmoothInvitationList> in
            let me = context.identity
            let alias = try pathAlias(context, "community", else: .invalidCommunity)
            let links = links(request)
            return SmoothResponse(
                try await read { c in
                    let community = try await requireCommunity(alias, me, c)
                    let all = try await invites.list(in: community.id, c)
                    let creators = try await workspaces.smoothProfiles(Array(Set(all.map(\.createdBy))), c)
                    return SmoothInvitationList(
                        invitations: all.map { invite in
                            let creator = creators[invite.createdBy]
                            return SmoothInvitation(
                                invitationId: invite.alias, nickname: creator?.nickname, userCode: creator?.code,
                                profileImage: links.profileImage(creator?.profileImage), inviteCode: invite.code)
                        })
                })
        }
        routes.delete("invitation") { request, context -> SmoothDone in
            let me = context.identity
            let alias = try queryAlias(request, else: .invalidInvitation)
            try await smoothWrite { c in
                // The invite names its community; a community the caller is not in hides it (4005).
                guard let invite = try await invites.find(alias: alias, c),
                    let community = try await workspaces.find(invite.workspaceId, member: me, lock: true, kind: .community, c),
                    try await invites.find(alias: alias, c) != nil
                else { throw SmoothError.invalidInvitation }
                guard community.ownerId == me else { throw SmoothError.noPermission }
                try await invites.revoke(invite.code, c)
            }
            return SmoothDone()
        }
        return routes
    }
}
