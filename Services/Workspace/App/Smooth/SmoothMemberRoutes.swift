import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/community-server/community/{id}/member` and `/community/member`: the member list, leaving
/// and kicking, joining by invitation.
extension WorkspaceAPI {
    /// Mounted at `/smooth/community/community`.
    var smoothMemberRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get(":community/member") { request, context -> SmoothResponse<SmoothMemberList> in
            let me = context.identity
            let alias = try pathAlias(context, "community", else: .invalidCommunity)
            let links = links(request)
            return SmoothResponse(
                try await read { c in
                    let community = try await requireCommunity(alias, me, c)
                    let members = try await workspaces.smoothMembers(of: community.id, c)
                    return SmoothMemberList(members: members.map { SmoothMember($0, owner: community.ownerId, links) })
                })
        }
        routes.delete(":community/member") { request, context in try await removeMember(request, context) }
        routes.post("member") { request, context -> SmoothResponse<SmoothCommunity> in
            let me = context.identity
            guard let code = Self.invitationCode(try await request.decodeBody(as: SmoothJoinBody.self, context: context).code) else {
                throw SmoothError.invalidInvitation
            }
            let community = try await smoothWrite { c in
                // Community row first, then the invite: the same lock order as every other path.
                guard let id = try await invites.workspace(of: code, c), let community = try await workspaces.lock(id, kind: .community, c),
                    try await invites.lockUsable(code, c) != nil
                else { throw SmoothError.invalidInvitation }
                try await joinCommunity(me, community.id, via: .inviteCode, c)
                try await invites.use(code, c)
                return community
            }
            return SmoothResponse(SmoothCommunity(community, links(request)))
        }
        return routes
    }

    /// The code of `{code}`: the bare code, or the code at the end of an invitation link.
    static func invitationCode(_ text: String?) -> String? {
        guard var value = text?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
        if let query = value.firstIndex(where: { $0 == "?" || $0 == "#" }) { value = String(value[..<query]) }
        while value.hasSuffix("/") { value.removeLast() }
        if let slash = value.lastIndex(of: "/") { value = String(value[value.index(after: slash)...]) }
        guard !value.isEmpty, value.count <= 64, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return value
    }

    /// `DELETE /community/{id}/member?id={member}` (Smooth's `deleteMember`): a member removes
    /// themself (leaving); the owner removes anyone (kicking). The owner leaving hands the
    /// community to the member who has belonged longest; an owner alone deletes it. Another
    /// member's id from a non-owner is 1401; an id that is not a member is 4007.
    private func removeMember(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothDone {
        let me = context.identity
        let alias = try pathAlias(context, "community", else: .invalidCommunity)
        let memberAlias = try queryAlias(request, else: .notMember)
        let icons = try await smoothWrite { c -> [String] in
            let community = try await requireCommunity(alias, me, c, lock: true)
            guard let target = try await workspaces.members(of: community.id, aliases: [memberAlias], c)[memberAlias] else { throw SmoothError.notMember }
            guard target == me || community.ownerId == me else { throw SmoothError.noPermission }
            guard target == community.ownerId else {
                try await removeFromCommunity(target, community.id, heir: community.ownerId, c)
                return []
            }
            guard let heir = try await workspaces.longestMember(of: community.id, other: target, c) else {
                return try await deleteCommunity(community, c)
            }
            _ = try await workspaces.setOwner(community.id, heir, c)
            try await emit(WorkspaceEvents.WorkspaceOwnerChanged(workspaceId: community.id, previousOwnerId: target, ownerId: heir), c)
            try await admitEverywhere(heir, community.id, c)
            try await removeFromCommunity(target, community.id, heir: heir, c)
            return []
        }
        icons.forEach(images.remove)
        return SmoothDone()
    }
}
