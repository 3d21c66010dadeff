import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceKit

/// A payment as PortOne reports it (`GET /payments/{imp_uid}`), the fields validation needs.
struct PortOnePayment: Sendable, Decodable, Equatable {
    var imp_uid: String
    var merchant_uid: String
    /// `ready`, `paid`, `failed` or `cancelled`.
    var status: String
    /// KRW; PortOne sends a JSON number.
    var amount: Double
    /// The order name the client set (`IamportPayment(name: item.item)`).
    var name: String?
    /// Unix seconds; 0 while unpaid.
    var paid_at: Int64?
}

/// The PortOne (iamport) REST API: an access token from `POST /users/getToken` (cached until
/// shortly before it expires; one fetch at a time however many validations wait for it) and
/// payment lookups. Every failure to get a usable answer — unreachable, slow, 5xx, malformed,
/// refused credentials — is E99 with HTTP 503; nothing is credited then. The key, the secret and
/// the token are never logged.
actor PortOneClient {
    private let settings: PaymentSettings
    private let client: HTTPClient
    private let logger: Logger
    private var token: (value: String, renewAt: ContinuousClock.Instant)?
    private var tokenFetch: Task<String, any Error>?

    init(settings: PaymentSettings, client: HTTPClient, logger: Logger) {
        self.settings = settings
        self.client = client
        self.logger = logger
    }

    /// The payment `impUID`, or nil when PortOne does not know it.
    func payment(_ impUID: String) async throws -> PortOnePayment? {
        guard settings.portOneConfigured else {
            throw APIError.dependencyUnavailable("PortOne is not configured (payment.portone-api-key / -secret)")
        }
        // `impUID` is checked to be URL-safe by the route; escape anything else anyway.
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        let path = impUID.addingPercentEncoding(withAllowedCharacters: unreserved) ?? impUID
        for attempt in 0..<2 {
            var request = HTTPClientRequest(url: "\(settings.portOneURL)/payments/\(path)")
            request.headers.add(name: "Authorization", value: try await accessToken())
            let (status, body) = try await send(request, "payment lookup")
            switch status {
            case 200:
                let envelope = try decode(Envelope<PortOnePayment>.self, body, "payment lookup")
                guard envelope.code == 0, let payment = envelope.response else { return nil }
                return payment
            case 404:
                return nil
            case 401 where attempt == 0:
                // The cached token was revoked or expired early: fetch a new one, once.
                dropToken()
            default:
                throw APIError.dependencyUnavailable("PortOne payment lookup answered HTTP \(status)")
            }
        }
        throw APIError.dependencyUnavailable("PortOne refused a fresh access token")
    }

    // MARK: access token

    private func accessToken() async throws -> String {
        if let token, ContinuousClock.now < token.renewAt { return token.value }
        if let tokenFetch { return try await tokenFetch.value }
        let fetch = Task { try await self.fetchToken() }
        tokenFetch = fetch
        defer { tokenFetch = nil }
        return try await fetch.value
    }

    private func dropToken() {
        token = nil
    }

    private func fetchToken() async throws -> String {
        struct Credentials: Encodable { var imp_key: String; var imp_secret: String }
        struct Token: Decodable { var access_token: String; var now: Int64?; var expired_at: Int64 }
        var request = HTTPClientRequest(url: "\(settings.portOneURL)/users/getToken")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(Credentials(imp_key: settings.portOneAPIKey, imp_secret: settings.portOneAPISecret))))
        let (status, body) = try await send(request, "token")
        guard status == 200 else {
            logger.warning("PortOne refused the access-token request", metadata: ["http.status": "\(status)"])
            throw APIError.dependencyUnavailable("PortOne token request answered HTTP \(status)")
        }
        let envelope = try decode(Envelope<Token>.self, body, "token")
        guard envelope.code == 0, let issued = envelope.response, !issued.access_token.isEmpty else {
            throw APIError.dependencyUnavailable("PortOne token request answered code \(envelope.code)")
        }
        // PortOne's own clock gives the lifetime; renew a minute early (at once for short ones).
        let now = issued.now ?? Int64(Date().timeIntervalSince1970)
        let lifetime = max(0, issued.expired_at - now - 60)
        token = (issued.access_token, ContinuousClock.now + .seconds(lifetime))
        return issued.access_token
    }

    // MARK: transport

    private struct Envelope<Response: Decodable>: Decodable {
        var code: Int
        var message: String?
        var response: Response?
    }

    private func send(_ request: HTTPClientRequest, _ what: String) async throws -> (status: UInt, body: ByteBuffer) {
        let timeout = TimeAmount(settings.portOneTimeout)
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 1 << 20)
            return (response.status.code, body)
        } catch {
            logger.warning("PortOne is unreachable", metadata: ["portone.call": "\(what)", "error": "\(error)"])
            throw APIError.dependencyUnavailable("PortOne \(what) failed: \(error)")
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ body: ByteBuffer, _ what: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer: body))
        } catch {
            throw APIError.dependencyUnavailable("PortOne \(what) answer undecodable: \(error)")
        }
    }
}
