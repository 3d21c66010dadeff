import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The APNs provider API over HTTP/2 (`POST {base}/3/device/{token}`) with token-based
/// authentication: an ES256 provider token (`iss` = team id, `kid` = key id, from the `.p8` key)
/// shared by every request and renewed after 40 minutes (Apple refuses one older than an hour and
/// throttles renewals more often than every 20), or at once when APNs calls it expired or invalid.
final class APNsClient: PushSender {
    private let client: HTTPClient
    private let settings: APNsSettings
    private let timeout: TimeAmount
    private let tokens: AccessTokenCache

    init(client: HTTPClient, settings: APNsSettings, timeout: Duration) async throws {
        self.client = client
        self.settings = settings
        self.timeout = TimeAmount(timeout)
        let keys = JWTKeyCollection()
        do {
            await keys.add(ecdsa: try ES256PrivateKey(pem: settings.keyPEM), kid: JWKIdentifier(string: settings.keyId))
        } catch {
            throw APNsSetupError(description: "push.apns-key-file is not an ES256 (.p8) private key")
        }
        tokens = AccessTokenCache(keys: keys)
    }

    struct APNsSetupError: Error, CustomStringConvertible { let description: String }

    func send(token: String, content: NotificationContent, collapseId: String) async -> SendOutcome {
        let bearer: String
        do {
            bearer = try await tokens.current { [settings] keys in
                let claims = ProviderClaims(iss: .init(value: settings.teamId), iat: .init(value: Date()))
                return (try await keys.sign(claims, kid: JWKIdentifier(string: settings.keyId)), .seconds(40 * 60))
            }
        } catch {
            return .failed("APNs provider token: \(error)")
        }
        var request = HTTPClientRequest(url: "\(settings.url)/3/device/\(token)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(bearer)")
        request.headers.add(name: "apns-topic", value: settings.topic)
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-collapse-id", value: collapseId)
        request.headers.add(name: "content-type", value: "application/json")
        do {
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(APNsPayload(content))))
            let response = try await client.execute(request, timeout: timeout)
            let body = String(buffer: try await response.body.collect(upTo: 64 * 1024))
            switch response.status.code {
            case 200..<300: return .sent
            case 410: return .unregistered
            case 400 where body.contains("BadDeviceToken"): return .unregistered
            case 403 where body.contains("ExpiredProviderToken") || body.contains("InvalidProviderToken"):
                await tokens.invalidate()
                return .retry(after: nil, reason: "APNs 403: provider token refused")
            case 429, 500..<600:
                return .retry(after: FCMClient.retryAfter(response.headers), reason: "APNs \(response.status.code)")
            default:
                return .failed("APNs \(response.status.code): \(body.prefix(200))")
            }
        } catch {
            return .retry(after: nil, reason: "APNs unreachable: \(error)")
        }
    }

    struct ProviderClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// `aps` (alert, badge, default sound) and the conversation ids beside it for deep links.
    struct APNsPayload: Encodable {
        struct APS: Encodable {
            struct Alert: Encodable {
                var title: String
                var body: String
            }
            var alert: Alert
            var badge: Int
            var sound = "default"
        }
        var aps: APS
        var data: [String: String]

        init(_ content: NotificationContent) {
            aps = APS(alert: .init(title: content.title, body: content.body), badge: content.badge)
            data = content.data
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: DynamicKey.self)
            try container.encode(aps, forKey: DynamicKey("aps"))
            for (key, value) in data { try container.encode(value, forKey: DynamicKey(key)) }
        }

        struct DynamicKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ string: String) { stringValue = string }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }
}

/// The APNs settings (all of `push.apns-url`, `-key-file`, `-key-id`, `-team-id`, `-topic`, or APNs is off).
struct APNsSettings: Sendable, CustomStringConvertible {
    var url: String
    var keyPEM: String
    var keyId: String
    var teamId: String
    var topic: String
    /// An extra trusted CA certificate (PEM), for a private or test APNs endpoint.
    var caPEM: String?

    var description: String { "APNs \(url) topic \(topic) key \(keyId) team \(teamId)" }
}
