import Events
import Foundation
import Hummingbird
import ServiceKit

/// `GET/POST/PATCH/DELETE /auth/friend` and `PATCH /auth/ban-friend` on `FriendBook`'s rules;
/// `?id=` is the friendship's integer alias.
extension SmoothAuthRoutes {
    func addFriendRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("friend") { request, context -> SmoothResponse<[SmoothFriend]> in
            let entries = try await friends.list(for: context.identity)
            return SmoothResponse(
                entries.map { entry in
                    SmoothFriend(
                        id: entry.alias, userId: entry.userAlias, name: entry.name, code: entry.code, profileImage: imageURL(entry.profileImage, request),
                        state: entry.state.rawValue)
                })
        }
        group.post("friend") { request, context -> SmoothDone in
            let body = try await request.decodeBody(as: FriendRequestBody.self, context: context)
            guard let (name, code) = FriendBook.tag(name: body.name, code: body.code) else { throw SmoothError.invalidInput }
            do {
                _ = try await friends.request(from: context.identity, name: name, code: code)
            } catch {
                // No such user (or one who banned the caller): 2111; the rest as the suite says.
                if Self.apiError(error)?.code == "E13" { throw SmoothError.accountNotFound }
                throw error
            }
            return SmoothDone()
        }
        group.patch("friend") { request, context -> SmoothDone in
            try await change(request, context, to: .accepted)
        }
        group.patch("ban-friend") { request, context -> SmoothDone in
            try await change(request, context, to: .banned)
        }
        group.delete("friend") { request, context -> SmoothDone in
            try await change(request, context, to: .removed)
        }
    }

    /// Accept, ban or delete (refuse) the caller's friendship `?id=`: 2170 when there is none
    /// the caller may see, 2103 accepting one's own request.
    private func change(_ request: Request, _ context: AuthenticatedContext, to state: AuthEvents.FriendshipChanged.State) async throws -> SmoothDone {
        let alias = try SmoothAuthValidation.alias(request.uri.queryParameters.get("id"))
        guard let id = try await friends.friendship(alias: alias) else { throw SmoothError.friendNotFound }
        do {
            try await friends.change(id, by: context.identity, to: state)
        } catch {
            if Self.apiError(error)?.code == "E13" { throw SmoothError.friendNotFound }
            throw error
        }
        return SmoothDone()
    }
}
