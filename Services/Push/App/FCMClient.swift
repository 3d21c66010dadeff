import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// What a provider said about one notification.
enum SendOutcome: Sendable, Equatable {
    case sent
    /// The token is dead (FCM `UNREGISTERED`, APNs 410): drop it.
    case unregistered
    /// Worth another attempt (429, 5xx, a network failure), not before `after` when the provider said.
    case retry(after: Duration?, reason: String)
    /// Refused for good (a malformed request, an invalid token format).
    case failed(String)
}

/// A provider's client: sends one notification to one device.
protocol PushSender: Sendable {
    func send(token: String, content: NotificationContent, collapseId: String) async -> SendOutcome
}

/// FCM HTTP v1 (`POST {base}/v1/projects/{project}/messages:send`) with an OAuth2 access token
/// obtained from the service account by the JWT bearer grant (RS256, scope
/// `firebase.messaging`, at the account's `token_uri`), cached and renewed a minute before it
/// expires (or at once when FCM answers 401).
final class FCMClient: PushSender {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    private let client: HTTPClient
    private let baseURL: String
    private let account: FCMServiceAccount
    private let timeout: TimeAmount
    private let tokens: AccessTokenCache
    private let logger: Logger

    init(client: HTTPClient, baseURL: String, account: FCMServiceAccount, timeout: Duration, logger: Logger) async throws {
        self.client = client
        self.baseURL = baseURL
        self.account = account
        self.timeout = TimeAmount(timeout)
        let keys = JWTKeyCollection()
        do {
            await keys.add(rsa: try Insecure.RSA.PrivateKey(pem: account.private_key), digestAlgorithm: .sha256)
        } catch {
            throw FCMSetupError(description: "the service account's private_key is not an RSA PEM key")
        }
        tokens = AccessTokenCache(keys: keys)
        self.logger = logger
    }

    struct FCMSetupError: Error, CustomStringConvertible { let description: String }

    func send(token: String, content: NotificationContent, collapseId: String) async -> SendOutcome {
        let access: String
        do {
            access = try await tokens.current { try await self.fetchAccessToken($0) }
        } catch {
            return .retry(after: nil, reason: "FCM access token: \(error)")
        }
        var request = HTTPClientRequest(url: "\(baseURL)/v1/projects/\(account.project_id)/messages:send")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(access)")
        request.headers.add(name: "Content-Type", value: "application/json")
        do {
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(FCMRequest(token: token, content: content, collapseId: collapseId))))
            let response = try await client.execute(request, timeout: timeout)
            let body = String(buffer: try await response.body.collect(upTo: 64 * 1024))
            switch response.status.code {
            case 200..<300: return .sent
            case 401:
                await tokens.invalidate()
                return .retry(after: nil, reason: "FCM 401: access token refused")
            case 404 where body.contains("UNREGISTERED"), 400 where body.contains("UNREGISTERED"): return .unregistered
            case 429, 500..<600:
                return .retry(after: Self.retryAfter(response.headers), reason: "FCM \(response.status.code)")
            default:
                return .failed("FCM \(response.status.code): \(body.prefix(200))")
            }
        } catch {
            return .retry(after: nil, reason: "FCM unreachable: \(error)")
        }
    }

    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        guard let value = headers.first(name: "Retry-After"), let seconds = Int(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 3_600))
    }

    /// The JWT bearer grant: a signed assertion for the access token and its lifetime.
    private func fetchAccessToken(_ keys: JWTKeyCollection) async throws -> (String, Duration) {
        let now = Date()
        let claims = GrantClaims(
            iss: .init(value: account.client_email), scope: Self.scope, aud: .init(value: [account.token_uri]), iat: .init(value: now),
            exp: .init(value: now.addingTimeInterval(3_600)))
        var header = JWTHeader()
        if let kid = account.private_key_id { header.kid = kid }
        let assertion = try await keys.sign(claims, header: header)
        var request = HTTPClientRequest(url: account.token_uri)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=\(Self.formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(assertion)"
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await client.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .ok else { throw TokenGrantError(description: "token endpoint answered \(response.status.code)") }
        let grant = try JSONDecoder().decode(Grant.self, from: Data(buffer: body))
        return (grant.access_token, .seconds(max(0, (grant.expires_in ?? 3_600) - 60)))
    }

    private static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    struct TokenGrantError: Error, CustomStringConvertible { let description: String }

    private struct Grant: Decodable {
        var access_token: String
        var expires_in: Int?
    }

    struct GrantClaims: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The `message` of an FCM v1 send: the notification for every platform, the ids as data,
    /// the badge (iOS through APNs, Android as the notification count), a collapse key per message.
    struct FCMRequest: Encodable {
        struct Message: Encodable {
            struct Notification: Encodable {
                var title: String
                var body: String
            }
            struct Android: Encodable {
                struct Notification: Encodable { var notification_count: Int }
                var collapse_key: String
                var notification: Notification
            }
            struct APNS: Encodable {
                struct Payload: Encodable {
                    struct APS: Encodable { var badge: Int }
                    var aps: APS
                }
                var headers: [String: String]
                var payload: Payload
            }
            var token: String
            var notification: Notification
            var data: [String: String]
            var android: Android
            var apns: APNS
        }
        var message: Message

        init(token: String, content: NotificationContent, collapseId: String) {
            message = Message(
                token: token, notification: .init(title: content.title, body: content.body), data: content.data,
                android: .init(collapse_key: collapseId, notification: .init(notification_count: content.badge)),
                apns: .init(headers: ["apns-collapse-id": collapseId], payload: .init(aps: .init(badge: content.badge))))
        }
    }
}

/// One OAuth2 access token shared by every send, fetched once when missing or about to expire.
actor AccessTokenCache {
    private let keys: JWTKeyCollection
    private var token: (value: String, renewAt: ContinuousClock.Instant)?
    private var fetching: Task<(String, Duration), any Error>?

    init(keys: JWTKeyCollection) {
        self.keys = keys
    }

    func current(_ fetch: @escaping @Sendable (JWTKeyCollection) async throws -> (String, Duration)) async throws -> String {
        if let token, ContinuousClock.now < token.renewAt { return token.value }
        // Concurrent sends share one fetch.
        let task = fetching ?? Task { [keys] in try await fetch(keys) }
        fetching = task
        defer { fetching = nil }
        let (value, lifetime) = try await task.value
        token = (value, ContinuousClock.now + lifetime)
        return value
    }

    func invalidate() { token = nil }
}
