import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Smooth's `/community-server` (client contract §2.1, docs/smooth-api.md): communities are
/// workspaces of kind `community`, served from the same stores and publishing the same
/// `workspace.v1` events as `/v1`, under `/smooth/community/...` (the gateway maps the public
/// prefix onto it and forwards the verified user). Integer aliases go in and out; the `/v1`
/// surface and this one never see each other's kind.
///
/// Access: a community the user is not a member of does not exist for them (4002, whatever the
/// reason); a category or channel they cannot see is 4003 / 4004. Owner-only actions by other
/// members are 1401.
extension WorkspaceAPI {
    /// Mounts the surface: the public icon route, then everything else for the signed-in user.
    func addSmoothRoutes(to router: some RouterMethods<SuiteRequestContext>) {
        // On the router itself, so it also wraps the not-found answer of unknown paths and methods
        // under the prefix (which no group's middleware sees).
        _ = router.add(middleware: SmoothPrefixErrors())
        let smooth = router.group("smooth/community").add(middleware: SmoothErrorMiddleware<SuiteRequestContext>(surface: .community))
        smooth.get("icons/:file") { _, context in try await icon(context) }
        let routes = smooth.group(context: AuthenticatedContext.self)
        routes.addRoutes(smoothCommunityRoutes, atPath: "community")
        routes.addRoutes(smoothMemberRoutes, atPath: "community")
        routes.addRoutes(smoothInvitationRoutes, atPath: "community")
        routes.addRoutes(smoothCategoryRoutes, atPath: "category")
        routes.addRoutes(smoothChannelRoutes, atPath: "channel")
    }

    // MARK: helpers

    /// A mutation in one transaction; a Smooth refusal thrown inside comes out as itself (not
    /// wrapped in the driver's transaction error, which would make it a 1500).
    func smoothWrite<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await write(body)
        } catch let error as PostgresTransactionError {
            if let refusal = error.closureError as? SmoothError { throw refusal }
            throw error
        }
    }

    /// The community with this alias when `user` is a member (locked when `lock`), else 4002.
    func requireCommunity(_ alias: Int64?, _ user: UserID, _ c: PostgresConnection, lock: Bool = false) async throws -> WorkspaceRecord {
        guard let alias, let community = try await workspaces.community(alias: alias, member: user, lock: lock, c) else {
            throw SmoothError.invalidCommunity
        }
        return community
    }

    /// As `requireCommunity`, and 1401 unless `user` owns it.
    func requireCommunityOwner(_ alias: Int64?, _ user: UserID, _ c: PostgresConnection, lock: Bool = false) async throws -> WorkspaceRecord {
        let community = try await requireCommunity(alias, user, c, lock: lock)
        guard community.ownerId == user else { throw SmoothError.noPermission }
        return community
    }

    /// An integer id from the path (`:name`); one that cannot be an alias is `error`.
    func pathAlias(_ context: AuthenticatedContext, _ name: String, else error: SmoothError) throws -> Int64 {
        guard let alias = context.parameters.get(name).flatMap(IntegerAlias.parse) else { throw error }
        return alias
    }

    /// The `id` query parameter as an alias; one that cannot be an alias is `error`.
    func queryAlias(_ request: Request, _ name: String = "id", else error: SmoothError) throws -> Int64 {
        guard let alias = request.uri.queryParameters.get(name).flatMap(IntegerAlias.parse) else { throw error }
        return alias
    }

    /// The gateway's URL as the client reached it; direct calls fall back to the Host header.
    func publicURL(_ request: Request) -> String { request.smoothPublicURL }

    /// Where a stored image is served to Smooth's client (which sends no token for images).
    func links(_ request: Request) -> SmoothLinks {
        SmoothLinks(request: request)
    }
}

/// Absolute URLs for Smooth's answers (its client loads images by URL, without a token), under
/// the public URL and prefixes the edge forwarded.
struct SmoothLinks: Sendable {
    let request: Request

    var publicURL: String { request.smoothPublicURL }

    /// A community icon: `<public-url>/community-server/icons/<file>`, served without a token.
    func icon(_ coverImage: String?) -> String? {
        guard let coverImage, coverImage.hasPrefix(CoverImages.urlPrefix) else { return nil }
        return publicURL + request.smoothPrefix(.community) + "/icons/" + coverImage.dropFirst(CoverImages.urlPrefix.count)
    }

    /// A profile image as auth's events carry it (`SmoothURL.profileImage`).
    func profileImage(_ path: String?) -> String? { SmoothURL.profileImage(path, request) }

    /// The invitation link Smooth's client shows and strips back to the code.
    func invitation(_ code: String) -> String { publicURL + "/invite/c/" + code }
}

/// Every answer under `/smooth/community` in Smooth's envelope, unknown paths and methods included
/// (1400, not `/v1`'s E97 404); other paths pass untouched.
struct SmoothPrefixErrors: RouterMiddleware {
    typealias Context = SuiteRequestContext
    private let errors = SmoothErrorMiddleware<SuiteRequestContext>(surface: .community)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard path == "/smooth/community" || path.hasPrefix("/smooth/community/") else { return try await next(request, context) }
        return try await errors.handle(request, context: context, next: next)
    }
}

/// Smooth's codes the shared catalogue does not name.
extension SmoothError {
    /// A user named in a member list is not a member of the community (or of the private category).
    static let notInCommunity = SmoothError(4010, "커뮤니티에 존재하지 않는 회원입니다.")
    /// A public channel asked for in a private category.
    static let publicState = SmoothError(4012, "공개된 채널입니다.")
}
