import Hummingbird
import ServiceKit
import Uploads

/// `GET /auth/info`, `GET /auth/name/{id}`, `POST /auth/profile` (image), `PATCH /auth/profile`
/// (bio), and the images themselves.
extension SmoothAuthRoutes {
    func addProfileRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("info") { request, context -> SmoothResponse<SmoothAccount> in
            guard let user = try await account.store.find(id: context.identity) else { throw SmoothError.accountNotFound }
            return SmoothResponse(account(user, request))
        }
        group.get("name/:id") { request, context -> SmoothResponse<SmoothUserInfo> in
            let alias = try SmoothAuthValidation.alias(context.parameters.get("id"))
            guard let user = try await account.store.find(alias: alias) else { throw SmoothError.accountNotFound }
            return SmoothResponse(SmoothUserInfo(name: user.nickname, code: user.code, profileImage: imageURL(user.profileImage, request), bio: user.bio))
        }
        group.post("profile") { request, context -> SmoothDone in
            guard request.isMultipart else { throw SmoothError.invalidInput }
            let parts = try await request.multipartParts(limit: account.images.multipartLimit)
            guard let part = parts.first(where: { $0.name == "image" }) else { throw SmoothError.invalidInput }
            _ = try await account.replaceImage(of: context.identity, with: part)
            return SmoothDone()
        }
        group.patch("profile") { request, context -> SmoothDone in
            let body = try await request.decodeBody(as: SmoothBioBody.self, context: context)
            // The bio is in no event: nothing outside auth shows it.
            guard try await account.store.updateBio(id: context.identity, bio: try SmoothAuthValidation.bio(body.bio)) else {
                throw SmoothError.accountNotFound
            }
            return SmoothDone()
        }
    }

    /// Profile images without a token (Smooth's app loads them as plain URLs, as its S3 images
    /// were); the file names are random UUIDv7s.
    func addImageRoute(to group: RouterGroup<SuiteRequestContext>) {
        group.get("static/profiles/:file") { _, context -> Response in
            try await account.images.response(named: context.parameters.get("file") ?? "", context: context)
        }
    }
}
