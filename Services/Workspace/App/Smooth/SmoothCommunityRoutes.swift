import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/community-server/community...`: the user's communities, one community's layout, create,
/// rename, icon, delete. Creating one never costs coins (`workspace.creation-cost` is the `/v1`
/// workspaces' price; Smooth has no coins), so it is active at once.
extension WorkspaceAPI {
    /// Mounted at `/smooth/community/community`.
    var smoothCommunityRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get { request, context -> SmoothResponse<SmoothCommunityList> in
            let me = context.identity
            let links = links(request)
            let list = try await read { try await workspaces.communities(for: me, $0) }
            return SmoothResponse(SmoothCommunityList(communities: list.map { SmoothCommunity($0, links) }))
        }
        routes.post { request, context in try await createCommunity(request, context) }
        routes.get(":community") { request, context -> SmoothResponse<SmoothCommunityDetail> in
            let me = context.identity
            let alias = try pathAlias(context, "community", else: .invalidCommunity)
            return SmoothResponse(
                try await read { c in
                    try await communityView(try await requireCommunity(alias, me, c), for: me, c).detail
                })
        }
        routes.patch("name") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothRenameBody.self, context: context)
            let name = try SmoothName.valid(body.name)
            try await smoothWrite { c in
                let community = try await requireCommunityOwner(body.id, me, c, lock: true)
                guard
                    let updated = try await workspaces.update(community.id, name: name, description: community.description, coverImage: community.coverImage, c)
                else { throw SmoothError.invalidCommunity }
                try await emit(
                    WorkspaceEvents.WorkspaceUpdated(
                        workspaceId: updated.id, name: updated.name, description: updated.description, coverImage: updated.coverImage), c)
            }
            return SmoothDone()
        }
        routes.patch("icon") { request, context in try await changeIcon(request, context) }
        routes.delete(":community") { request, context -> SmoothDone in
            let me = context.identity
            let alias = try pathAlias(context, "community", else: .invalidCommunity)
            let icons = try await smoothWrite { c in
                let community = try await requireCommunityOwner(alias, me, c, lock: true)
                return try await deleteCommunity(community, c)
            }
            icons.forEach(images.remove)
            return SmoothDone()
        }
        return routes
    }

    /// Deletes the locked community (`workspace.deleted` names its channels); returns the images to remove.
    func deleteCommunity(_ community: WorkspaceRecord, _ c: PostgresConnection) async throws -> [String] {
        let all = try await channels.all(in: community.id, c)
        try await workspaces.delete(community.id, c)
        try await emit(WorkspaceEvents.WorkspaceDeleted(workspaceId: community.id, channelIds: all.map(\.id)), c)
        return ([community.coverImage] + all.map(\.coverImage)).compactMap { $0 }
    }

    /// `POST /community`: multipart `name`, `public` ("true"/"false"), `icon`? (a JSON or form body
    /// without the icon works too). The creator owns it; it comes with a text category holding
    /// the default text channel "일반" and a voice category holding a voice channel "일반".
    private func createCommunity(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothResponse<SmoothCommunity> {
        let me = context.identity
        let form = try await SmoothCommunityForm.read(request, context: context, images: images)
        let name = try SmoothName.valid(form.name)
        let icon = try storeIcon(form.icon)
        do {
            let community = try await smoothWrite { c in
                guard
                    let community = try await workspaces.insert(
                        .generate(), name: name, description: nil, coverImage: icon, owner: me, pendingDebit: nil, kind: .community,
                        isPublic: form.isPublic ?? true, c)
                else { throw SmoothError.badRequest }
                guard try await workspaces.addMember(community.id, me, c) else { throw PostgresStoreError("new community has members") }
                let text = try await categories.insert(.generate(), workspace: community.id, name: Self.smoothTextCategoryName, c)
                let voice = try await categories.insert(.generate(), workspace: community.id, name: Self.smoothVoiceCategoryName, c)
                guard
                    let general = try await channels.insert(
                        .generate(), workspace: community.id, category: text.id, name: Self.defaultChannelName, description: nil,
                        coverImage: nil, owner: me, isDefault: true, c),
                    let lounge = try await channels.insert(
                        .generate(), workspace: community.id, category: voice.id, name: Self.defaultChannelName, description: nil,
                        coverImage: nil, owner: me, isDefault: false, type: .voice, c)
                else { throw PostgresStoreError("default channel insert returned no row") }
                _ = try await channels.addMember(general.id, me, c)
                _ = try await channels.addMember(lounge.id, me, c)
                try await emitCreated(community, .community, defaultChannel: general, c)
                try await emit(
                    WorkspaceEvents.ChannelCreated(
                        workspaceId: community.id, channelId: lounge.id, name: lounge.name, description: nil, ownerId: me, isDefault: false,
                        createdAt: lounge.createdAt, alias: lounge.alias), c)
                try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: community.id, channelId: lounge.id, userId: me), c)
                return community
            }
            return SmoothResponse(SmoothCommunity(community, links(request)))
        } catch {
            images.remove(icon)
            throw error
        }
    }

    /// `PATCH /community/icon`: multipart `id` and `icon`; without an icon the community has none.
    private func changeIcon(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothDone {
        let me = context.identity
        let form = try await SmoothCommunityForm.read(request, context: context, images: images)
        let alias = form.id.flatMap(IntegerAlias.parse)
        let icon = try storeIcon(form.icon)
        let previous: String?
        do {
            previous = try await smoothWrite { c in
                let community = try await requireCommunityOwner(alias, me, c, lock: true)
                guard let updated = try await workspaces.update(community.id, name: community.name, description: community.description, coverImage: icon, c)
                else { throw SmoothError.invalidCommunity }
                try await emit(
                    WorkspaceEvents.WorkspaceUpdated(
                        workspaceId: updated.id, name: updated.name, description: updated.description, coverImage: updated.coverImage), c)
                return community.coverImage
            }
        } catch {
            images.remove(icon)
            throw error
        }
        images.remove(previous)
        return SmoothDone()
    }

    /// Stores an uploaded icon (1400 when it is not an image or too large).
    private func storeIcon(_ part: FormPart?) throws -> String? {
        do {
            return try part.map(images.store)
        } catch let error as APIError where error.status == .badRequest {
            throw SmoothError.badRequest
        }
    }

    /// Serves a community icon without a token (Smooth's client loads images by URL); other
    /// images of the volume are not served here.
    func icon(_ context: SuiteRequestContext) async throws -> Response {
        let file = context.parameters.get("file") ?? ""
        guard ImageDirectory.isOurName(file), try await read({ try await workspaces.isCommunityIcon(CoverImages.urlPrefix + file, $0) }) else {
            throw SmoothError.invalidCommunity
        }
        var response = try await images.response(named: file, context: context)
        response.headers[.cacheControl] = "public, max-age=86400, immutable"
        return response
    }
}

/// The fields of community create and icon change: multipart (as the iOS client sends them),
/// JSON or form-urlencoded (no icon then).
struct SmoothCommunityForm: Sendable {
    var id: String?
    var name: String?
    var isPublic: Bool?
    var icon: FormPart?

    private struct TextBody: Decodable {
        var id: Int64?
        var name: String?
        var isPublic: Bool?

        enum CodingKeys: String, CodingKey { case id, name, `public` }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decodeIfPresent(Int64.self, forKey: .id)
            name = try c.decodeIfPresent(String.self, forKey: .name)
            if let flag = try? c.decodeIfPresent(Bool.self, forKey: .public) {
                isPublic = flag
            } else {
                isPublic = try c.decodeIfPresent(String.self, forKey: .public).flatMap(SmoothCommunityForm.flag)
            }
        }
    }

    static func read(_ request: Request, context: some RequestContext, images: ImageDirectory) async throws -> SmoothCommunityForm {
        if request.isMultipart {
            let parts: [FormPart]
            do {
                parts = try await request.multipartParts(limit: images.multipartLimit)
            } catch let error as APIError where error.status == .badRequest {
                throw SmoothError.badRequest
            }
            return SmoothCommunityForm(
                id: parts.first { $0.name == "id" }?.text.trimmingCharacters(in: .whitespaces),
                name: parts.first { $0.name == "name" }?.text,
                isPublic: parts.first { $0.name == "public" }.flatMap { flag($0.text) },
                icon: parts.first { $0.name == "icon" && $0.body.readableBytes > 0 }
            )
        }
        let body: TextBody
        do {
            body = try await request.decodeBody(as: TextBody.self, context: context)
        } catch {
            throw SmoothError.badRequest
        }
        return SmoothCommunityForm(id: body.id.map(String.init), name: body.name, isPublic: body.isPublic, icon: nil)
    }

    /// "true" / "false" as Smooth's client writes its `public` part.
    static func flag(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        default: return nil
        }
    }
}
