import AsyncHTTPClient
import Configuration
import Database
import Events
import Hummingbird
import Logging
import OutboundHTTP
import ServiceCatalog
import ServiceKit

/// `payment`: Coin store, PortOne verification and the coin ledger; produces `payment.v1`,
/// consumes `workspace.v1` (the coin saga's debit and refund requests).
public enum PaymentService {
    public static let name = ServiceEntry.payment.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.payment.port), isSecret: false),
        "payment.portone-url": "https://api.iamport.kr",
        "payment.portone-api-key": ConfigValue(.string(""), isSecret: true),
        "payment.portone-api-secret": ConfigValue(.string(""), isSecret: true),
        "payment.portone-timeout-ms": 5_000,
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = PaymentMigrations.all
}

/// Builds the `payment` application: platform services, the saga consumer, routes.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let paymentSettings = try PaymentSettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, migrations: PaymentService.migrations, logger: logger)
    let postgres = platform.postgres
    let httpClient = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(3))))
    platform.addService(HTTPClientService(client: httpClient))
    let ledger = CoinLedger(logger: logger)
    let saga = CoinSaga(ledger: ledger, requests: DebitRequests(logger: logger), logger: logger)
    platform.addInboxConsumer(group: "payment.saga", topics: [.workspace], router: saga.router)
    let routes = StoreRoutes(
        postgres: postgres, records: StoreRecords(logger: logger), ledger: ledger,
        portOne: PortOneClient(settings: paymentSettings, client: httpClient, logger: logger), logger: logger
    )
    let router = platform.makeRouter()
    routes.add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
