import Database
import Events
import FirebaseAuth
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import ServiceKit

/// The study app's REST surface (client contract §3.1, docs/study-api.md), mounted under
/// `/study`. Every request names its user by a Firebase ID token in `idtoken` (401 without a
/// valid one); answers are status codes, with a body only where the contract shows one.
struct StudyAPI: Sendable {
    let postgres: PostgresClient
    let users: StudyUserStore
    let verifier: FirebaseTokenVerifier
    let queueStore: StudyQueueStore
    let matching: StudyMatching
    let chats: StudyChatStore
    let appStore: AppStoreVerifier
    let shop: StudyShopStore
    let searchRadiusMeters: Int
    let recommendedStudies: [String]
    let logger: Logger

    static let idToken = HTTPField.Name("idtoken")!

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        let user = router.group("study/v1/user")
        user.get { request, _ in await answer { try await login(request) } }
        user.post { request, _ in await answer { try await signUp(request) } }
        user.post("withdraw") { request, _ in await answer { try await withdraw(request) } }
        user.put("mypage") { request, _ in await answer { try await updatePreferences(request) } }
        user.put("update_fcm_token") { request, _ in await answer { try await updateFCMToken(request) } }
        addQueue(to: router)
        addChat(to: router)
        addShop(to: router)
    }

    /// Runs a route: a refusal is its status with no body; anything unexpected is logged and 500.
    func answer(_ route: () async throws -> Response) async -> Response {
        do {
            return try await route()
        } catch let refusal as StudyRefusal {
            return Response(status: refusal.status)
        } catch {
            logger.error("study request failed", metadata: ["error": "\(error)"])
            return Response(status: .internalServerError)
        }
    }

    /// The uid the request's Firebase ID token names (401 for any failure: the app then refreshes
    /// its token and retries).
    func uid(of request: Request) async throws(StudyRefusal) -> String {
        guard let token = request.headers[Self.idToken]?.trimmingCharacters(in: .whitespaces), !token.isEmpty else { throw .unauthorized }
        do {
            return try await verifier.verify(token).uid
        } catch {
            throw .unauthorized
        }
    }

    /// `GET /v1/user` (and `shop/myinfo`): 200 with the User object; 406 not registered.
    func login(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        guard let user = try await postgres.withLiveConnection({ try await users.find(uid, $0) }) else { throw StudyRefusal.notRegistered }
        return try json(StudyUserResponse(user))
    }

    /// `POST /v1/user`: 200 registered; 201 already registered; 202 a nickname the app may not use;
    /// 501 a missing or malformed field.
    private func signUp(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let form = try await StudyForm.read(request)
        if try await postgres.withLiveConnection({ try await users.find(uid, $0) }) != nil { throw StudyRefusal.code(201) }
        let signUp = try StudySignUp(form)
        let created = try await postgres.withLiveTransaction(logger: logger) { [users, logger] c in
            let user = try await users.insert(signUp, uid: uid, objectId: StudyFields.objectId(), c)
            if let user { try await Self.tokenChanged(uid, user.fcmToken, c, logger) }
            return user
        }
        guard created != nil else { throw StudyRefusal.code(201) }
        return Response(status: .ok)
    }

    /// `POST /v1/user/withdraw`: 200; 406 not registered (or withdrawn already).
    private func withdraw(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let deleted = try await postgres.withLiveTransaction(logger: logger) { [users, logger] c in
            guard try await users.delete(uid, c) else { return false }
            try await Self.tokenChanged(uid, nil, c, logger)
            return true
        }
        guard deleted else { throw StudyRefusal.notRegistered }
        return Response(status: .ok)
    }

    /// `PUT /v1/user/mypage` (`searchable`, `ageMin`, `ageMax`, `gender`, `study`): 200; 406; 501.
    private func updatePreferences(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let preferences = try StudyPreferences(try await StudyForm.read(request))
        guard try await postgres.withLiveConnection({ try await users.updatePreferences(uid, preferences, $0) }) else { throw StudyRefusal.notRegistered }
        return Response(status: .ok)
    }

    /// `PUT /v1/user/update_fcm_token` (`FCMtoken`): 200; 406; 501.
    private func updateFCMToken(_ request: Request) async throws -> Response {
        let uid = try await uid(of: request)
        let token = try StudyFields.fcmToken(try await StudyForm.read(request).string("FCMtoken"))
        let updated = try await postgres.withLiveTransaction(logger: logger) { [users, logger] c in
            guard try await users.updateFCMToken(uid, token, c) else { return false }
            try await Self.tokenChanged(uid, token, c, logger)
            return true
        }
        guard updated else { throw StudyRefusal.notRegistered }
        return Response(status: .ok)
    }

    /// Tells `push` the user's token (nil: withdrawn), in the transaction of the change.
    static func tokenChanged(_ uid: String, _ token: String?, _ c: PostgresConnection, _ logger: Logger) async throws {
        try await Outbox.append(
            CloudEvent(source: StudyMatching.source, data: StudyEvents.UserTokenChanged(uid: uid, fcmToken: token, changedAt: Date())), on: c,
            logger: logger)
    }
}
