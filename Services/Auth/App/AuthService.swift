import AsyncHTTPClient
import Configuration
import Database
import Events
import Foundation
import Hummingbird
import Logging
import OutboundHTTP
import ServiceCatalog
import ServiceKit
import Uploads

/// `auth`: Accounts, credentials, tokens, device tokens and friends; produces `auth.user.v1`,
/// consumes `payment.v1` (the coin balance `/users/me` shows).
public enum AuthService {
    public static let name = ServiceEntry.auth.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.auth.port), isSecret: false),
        "auth.access-ttl-seconds": 600,
        "auth.refresh-ttl-seconds": 2_592_000,
        "auth.bcrypt-cost": 10,
        "auth.bcrypt-max-pending": ConfigValue(.int(HashingAdmission.defaultCapacity), isSecret: false),
        "auth.bcrypt-max-wait-ms": 2_000,
        "apple.jwks-url": "https://appleid.apple.com/auth/keys",
        "apple.issuer": "https://appleid.apple.com",
        "apple.audience": "",
        "kakao.api-url": "https://kapi.kakao.com",
        "auth.files-directory": "data/auth-files",
        // Smooth's `/auth-server` (docs/smooth-api.md): 100 days, as its server gave (its app never refreshes).
        "auth.smooth.access-ttl-seconds": 8_640_000,
        // The relay of email verification codes; no host = send-mail refuses (2301).
        "auth.smtp.host": "",
        "auth.smtp.port": 25,
        "auth.smtp.from": "",
        "auth.smtp.username": "",
        "auth.smtp.timeout-seconds": 10,
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = AuthMigrations.all
}

/// Builds the `auth` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let authSettings = try AuthSettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, migrations: AuthService.migrations, logger: logger)
    let httpClient = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(3))))
    platform.addService(HTTPClientService(client: httpClient))
    let postgres = platform.postgres
    let store = UserStore(postgres: postgres, logger: logger)
    let hasher = PasswordHasher(cost: authSettings.bcryptCost, maxPending: authSettings.bcryptMaxPending, maxWait: authSettings.bcryptMaxWait)
    let accounts = AccountRoutes(
        postgres: postgres, store: store, tokens: try await Tokens(settings: authSettings, store: store), hasher: hasher,
        logger: logger, dummyHash: try await hasher.hash(UUID().uuidString, sheddable: false),
        apple: AppleSignIn(jwksURL: authSettings.appleJWKSURL, audience: authSettings.appleAudience, issuer: authSettings.appleIssuer, client: httpClient),
        kakao: KakaoSignIn(baseURL: authSettings.kakaoAPIURL, client: httpClient),
        images: try ImageDirectory(directory: try settings.string("auth.files-directory"), setting: "auth.files-directory", urlPrefix: "/static/profiles/")
    )
    platform.addInboxConsumer(group: "auth.coins", topics: [.payment], router: CoinBalances.projection)
    platform.addGatedService { AliasAnnouncement(postgres: postgres, store: store, logger: logger) }
    let router = platform.makeRouter()
    accounts.add(to: router)
    accounts.addGenerationA(to: router)
    FriendRoutes(postgres: postgres, logger: logger).add(to: router)
    SmoothAuthRoutes(
        account: accounts, friends: FriendBook(postgres: postgres, logger: logger),
        codes: EmailCodes(postgres: postgres, logger: logger, key: EmailCodes.key(from: authSettings.jwtPrivateKeyPEM)),
        mailer: SMTPClient(settings: authSettings.smtp), accessTokenTTL: authSettings.smoothAccessTokenTTL,
        codeGuesses: FailureThrottle(limit: SmoothAuthRoutes.maxCodeGuesses, window: SmoothAuthRoutes.codeGuessWindow)
    ).add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
