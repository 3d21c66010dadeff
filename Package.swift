// swift-tools-version:6.1
import PackageDescription

// Settings shared by every target: Swift 6 language mode is the default for tools 6.x;
// the upcoming features below keep imports explicit and existentials visible.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// MARK: - Dependencies by product
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let hummingbirdTesting: Target.Dependency = .product(name: "HummingbirdTesting", package: "hummingbird")
let postgres: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let lifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let configuration: Target.Dependency = .product(name: "Configuration", package: "swift-configuration")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let jwt: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let httpClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let hbWebSocket: Target.Dependency = .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket")
let hbWSClient: Target.Dependency = .product(name: "HummingbirdWSClient", package: "hummingbird-websocket")
let nioFoundationCompat: Target.Dependency = .product(name: "NIOFoundationCompat", package: "swift-nio")
let openAPIKit: Target.Dependency = .product(name: "OpenAPIKit", package: "OpenAPIKit")
let yams: Target.Dependency = .product(name: "Yams", package: "Yams")
let tracing: Target.Dependency = .product(name: "Tracing", package: "swift-distributed-tracing")
let otel: Target.Dependency = .product(name: "OTel", package: "swift-otel")

// MARK: - Services: a library `<Name>App` (buildApplication) and a thin executable `<Name>Server`
// per folder `Services/<Name>`, with what it needs beyond the platform. The executable is `<Name>`
// in kebab case (`ChatFanout` → `chat-fanout`), the name its ServiceCatalog entry gives it;
// ServiceCatalogTests checks that this list, the folders and the catalog agree. (The list is not
// read from the disk: SwiftPM caches the evaluated manifest by its text, so a new folder would go
// unseen until this file changed.)
let serviceFolders: [String: [Target.Dependency]] = [
    "Auth": [
        .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"), "AccessTokens", "ClientContract", "Uploads", "OutboundHTTP", crypto, httpClient, jwt,
        metrics, nioCore, nioHTTP1, lifecycle,
        .product(name: "NIOPosix", package: "swift-nio"),
    ],
    "Chat": ["ClientContract", "Uploads", "ChatInternalAPI", metrics],
    "ChatFanout": ["Messaging", metrics, lifecycle, tracing],
    "Gateway": [
        "Messaging", "AccessTokens", "ClientContract", "OutboundHTTP", "ChatInternalAPI", "FirebaseAuth", "CSocketRing", httpClient, nioCore, nioHTTP1,
        lifecycle, hbWebSocket,
    ],
    "Payment": ["ClientContract", "OutboundHTTP", httpClient, nioCore, nioHTTP1, nioFoundationCompat],
    "Presence": [metrics],
    "Push": ["OutboundHTTP", httpClient, jwt, metrics, nioCore, nioHTTP1, nioFoundationCompat, .product(name: "NIOSSL", package: "swift-nio-ssl")],
    "Workspace": ["ClientContract", "Uploads"],
    "Study": [
        "FirebaseAuth", "OutboundHTTP", httpClient, nioCore, httpTypes, jwt, .product(name: "X509", package: "swift-certificates"),
        .product(name: "SwiftASN1", package: "swift-asn1"),
    ],
]

struct ServiceSpec {
    let folder: String  // Services/<folder>
    let executable: String  // product / binary name
    let extra: [Target.Dependency]
}
let services: [ServiceSpec] = serviceFolders.keys.sorted().map { folder in
    let executable = folder.enumerated().map { index, c in
        c.isUppercase ? (index == 0 ? "" : "-") + c.lowercased() : String(c)
    }.joined()
    return ServiceSpec(folder: folder, executable: executable, extra: serviceFolders[folder] ?? [])
}

let platform: [Target.Dependency] = ["ServiceCatalog", "Common", "Kafka", "Events", "Database", "ServiceKit", hummingbird, logging, configuration, postgres]

var targets: [Target] = [
    .systemLibrary(
        name: "CRdKafka",
        path: "Shared/CRdKafka",
        pkgConfig: "rdkafka",
        providers: [.apt(["librdkafka-dev"])]
    ),
    // Several sockets' writes in one system call (io_uring), for the gateway's write drains.
    .target(name: "CSocketRing", path: "Shared/CSocketRing"),
    .target(name: "Common", dependencies: [], path: "Shared/Common", swiftSettings: swiftSettings),
    // Which services exist (ports, databases, routes): read by the launcher, the gateway, the harness.
    .target(name: "ServiceCatalog", dependencies: [], path: "Services/Catalog", swiftSettings: swiftSettings),
    // Chat's internal API (session, replay, reader check): served by chat, called by the gateway.
    .target(
        name: "ChatInternalAPI", dependencies: ["Events", "ClientContract", httpTypes, nioCore], path: "Services/Chat/Internal", swiftSettings: swiftSettings),
    .testTarget(name: "ChatInternalAPITests", dependencies: ["ChatInternalAPI", "ClientContract", "Events", httpTypes, nioCore], swiftSettings: swiftSettings),
    .target(
        name: "Kafka", dependencies: ["CRdKafka", "Common", logging, lifecycle, metrics, tracing, nioCore, .product(name: "NIOPosix", package: "swift-nio")],
        path: "Shared/Kafka", swiftSettings: swiftSettings),
    // Crypto: name-based ids (a study user's live route).
    .target(name: "Events", dependencies: [crypto, nioCore], path: "Shared/Events", swiftSettings: swiftSettings),
    .target(
        name: "Database",
        dependencies: ["Common", "Kafka", "Events", postgres, logging, metrics, lifecycle, tracing, .product(name: "NIOSSL", package: "swift-nio-ssl")],
        path: "Shared/Database",
        swiftSettings: swiftSettings
    ),
    // Events on Kafka: topic specifications, whole-topic tables, CloudEvents records.
    .target(name: "Messaging", dependencies: ["Events", "Kafka", logging, lifecycle], path: "Shared/Messaging", swiftSettings: swiftSettings),
    // The platform every executable runs on: settings, bootstrap, health, metrics, error mapping.
    .target(
        name: "ServiceKit",
        dependencies: [
            "Common", "Kafka", "Events", "Database", "Messaging", hummingbird, postgres, logging, metrics, prometheus, lifecycle, configuration, nioCore,
            nioFoundationCompat, tracing, otel,
        ],
        path: "Shared/ServiceKit",
        swiftSettings: swiftSettings
    ),
    // What clients see: text limits, shared shapes (MemberSummary, email rule), the JSON writer.
    .target(name: "ClientContract", dependencies: ["Events", "ServiceKit", hummingbird, nioCore], path: "Shared/ClientContract", swiftSettings: swiftSettings),
    // Multipart bodies, streamed file uploads, stored images.
    .target(
        name: "Uploads",
        dependencies: [
            "ClientContract", "Events", "ServiceKit", hummingbird, nioCore,
            .product(name: "_NIOFileSystem", package: "swift-nio"),
        ],
        path: "Shared/Uploads",
        swiftSettings: swiftSettings
    ),
    // Access tokens (JWT): signing, verification, key PEMs.
    .target(name: "AccessTokens", dependencies: ["Common", jwt], path: "Shared/AccessTokens", swiftSettings: swiftSettings),
    // Firebase ID tokens (the study app's `idtoken`): RS256 against Google's key set, cached by kid.
    .target(name: "FirebaseAuth", dependencies: [jwt, httpClient, logging, nioCore, nioHTTP1], path: "Shared/FirebaseAuth", swiftSettings: swiftSettings),
    // Outbound HTTP clients as platform services.
    .target(name: "OutboundHTTP", dependencies: [httpClient, lifecycle, tracing], path: "Shared/OutboundHTTP", swiftSettings: swiftSettings),
    .target(
        name: "TestSupport",
        dependencies: ["Common", "Kafka", "Events", "Database", "Messaging", "ServiceKit", postgres, logging],
        path: "Shared/TestSupport",
        swiftSettings: swiftSettings
    ),
    // The CLI imports no service library: `chatsuite dev` runs the service executables, which
    // `swift build` builds as products of their own.
    .executableTarget(
        name: "ChatSuiteCLI",
        dependencies: [
            "Common", "Kafka", "Events", "Database", "Messaging", "ServiceKit", "AccessTokens", "ServiceCatalog", "LoadGen", "EventExport", postgres, logging,
            lifecycle,
            argumentParser, httpClient, nioHTTP1, nioCore, hbWSClient, hummingbird,
            // `chatsuite bench study-search` signs Firebase ID tokens for its own key set.
            "FirebaseAuth", jwt, .product(name: "CryptoExtras", package: "swift-crypto"),
        ],
        path: "Services/ChatSuite",
        exclude: ["LoadGen"],
        swiftSettings: swiftSettings
    ),
    // `chatsuite events export`: topics to NDJSON partitioned by topic and hour, personal data nulled.
    .target(name: "EventExport", dependencies: ["Common", "Events", "Kafka", logging], path: "Shared/EventExport", swiftSettings: swiftSettings),
    .testTarget(
        name: "EventExportTests", dependencies: ["EventExport", "Common", "Events", "Kafka", "TestSupport", logging], swiftSettings: swiftSettings),
    // `chatsuite loadgen`'s engine (also the drill's setup and the gateway benchmarks' client).
    .target(
        name: "LoadGen",
        dependencies: [
            "Common", "Events", "Kafka", logging, httpClient, nioCore, nioHTTP1, hbWSClient, .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ],
        path: "Services/ChatSuite/LoadGen",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "LoadGenTests",
        dependencies: [
            "LoadGen", "Common", "Events", crypto, nioCore, nioHTTP1, .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
        ], swiftSettings: swiftSettings),
    .testTarget(
        name: "KafkaTests",
        dependencies: [
            "Common", "Kafka", "Events", "TestSupport", nioCore, .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        swiftSettings: swiftSettings),
    .testTarget(name: "EventsTests", dependencies: ["Events", yams], swiftSettings: swiftSettings),
    // Reads docker-compose.yml, deploy/Dockerfile and the sources the deployment files name.
    .testTarget(name: "ServiceCatalogTests", dependencies: ["ServiceCatalog", yams], swiftSettings: swiftSettings),
    .testTarget(name: "DatabaseTests", dependencies: ["Common", "Database", "Kafka", "Events", "TestSupport", postgres], swiftSettings: swiftSettings),
    .testTarget(
        name: "ServiceKitTests",
        dependencies: [
            "Common", "ServiceKit", "Kafka", "AccessTokens", "ClientContract", "TestSupport", "Database", hummingbird, hummingbirdTesting, jwt, postgres,
            metrics, prometheus,
        ],
        swiftSettings: swiftSettings
    ),
    // The whole-path harness (services in-process behind the gateway), shared by service tests.
    .target(
        name: "SuiteTesting",
        dependencies: [
            "AuthApp", "GatewayApp", "WorkspaceApp", "ChatApp", "ChatFanoutApp", "PaymentApp", "StudyApp", "ServiceKit", "ServiceCatalog", "AccessTokens",
            "TestSupport",
            "Database", "Events", "Kafka", "Common", "FirebaseAuth", .product(name: "CryptoExtras", package: "swift-crypto"),
            hummingbird, hummingbirdTesting, jwt, postgres, nioCore, configuration, logging, hbWSClient,
            .product(name: "NIOFoundationCompat", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            openAPIKit, yams, httpClient, nioHTTP1,
        ],
        path: "Tests/SuiteTesting",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "WorkspaceTests",
        dependencies: [
            "SuiteTesting", "WorkspaceApp", "ServiceKit", "TestSupport", "Database", "Events", "Kafka", "Common", hummingbird, hummingbirdTesting, postgres,
            nioCore,
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ChatTests",
        dependencies: [
            "SuiteTesting", "ChatApp", "ChatInternalAPI", "ServiceKit", "TestSupport", "Database", "Events", "Kafka", "Common", hummingbird, hummingbirdTesting,
            postgres, nioCore, httpClient, nioHTTP1,
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "PaymentTests",
        dependencies: [
            "SuiteTesting", "PaymentApp", "WorkspaceApp", "ServiceKit", "TestSupport", "Database", "Events", "Kafka", "Common", hummingbird, hummingbirdTesting,
            logging,
            postgres, nioCore, configuration, .product(name: "NIOFoundationCompat", package: "swift-nio"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ChatFanoutTests",
        dependencies: [
            "SuiteTesting", "ChatFanoutApp", "ServiceKit", "TestSupport", "Events", "Kafka", "Common", hummingbird, hummingbirdTesting, logging,
            configuration,
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "AuthTests",
        dependencies: [
            "SuiteTesting", "AuthApp", "ServiceKit", "ServiceCatalog", "Messaging", "AccessTokens", "TestSupport", "Database", "Events", "Kafka", "Common",
            hummingbird, hummingbirdTesting,
            jwt, postgres, nioCore,
            httpClient, nioHTTP1,
            .product(name: "CryptoExtras", package: "swift-crypto"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
        ],
        swiftSettings: swiftSettings
    ),
    // The gateway: its edge (routes, limits, hostile bodies) and its real-time protocols (Realtime/,
    // with python-socketio clients in Realtime/clients).
    .testTarget(
        name: "GatewayTests",
        dependencies: [
            "SuiteTesting", "GatewayApp", "ChatFanoutApp", "ServiceCatalog", "ServiceKit", "AccessTokens", "TestSupport", "Events", "Kafka", "Common",
            "OutboundHTTP", hummingbird, hummingbirdTesting, nioCore, nioHTTP1, httpClient, configuration, lifecycle, tracing,
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"), .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
        ],
        exclude: ["Realtime/clients"],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "PresenceTests",
        dependencies: [
            "SuiteTesting", "PresenceApp", "ChatFanoutApp", "ServiceCatalog", "ServiceKit", "TestSupport", "Database", "Events", "Kafka", "Messaging", "Common",
            hummingbird, hummingbirdTesting, postgres, nioCore, logging, configuration,
            .product(name: "NIOWebSocket", package: "swift-nio"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "UploadsTests", dependencies: ["Uploads", "ServiceKit", "TestSupport", nioCore, .product(name: "MultipartKit", package: "multipart-kit")],
        swiftSettings: swiftSettings),
    .testTarget(
        name: "APIDocumentTests",
        dependencies: [
            "SuiteTesting", "Events", "GatewayApp", "PresenceApp", "PushApp", "ServiceCatalog", "ServiceKit", "TestSupport", "Common", hummingbird,
            hummingbirdTesting,
            httpTypes,
            nioCore, openAPIKit, yams,
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "PushTests",
        dependencies: [
            "SuiteTesting", "PushApp", "PresenceApp", "ServiceCatalog", "ServiceKit", "TestSupport", "Events", "Common", "Database", "Kafka", "Messaging",
            httpTypes,
            hummingbird, hummingbirdTesting,
            postgres, nioCore, jwt, .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "NIOFoundationCompat", package: "swift-nio"),
            crypto, nioHTTP1, .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "StudyTests",
        dependencies: [
            "SuiteTesting", "StudyApp", "FirebaseAuth", "ServiceCatalog", "ServiceKit", "Database", hummingbird, hummingbirdTesting, httpTypes, nioCore,
            postgres, .product(name: "NIOFoundationCompat", package: "swift-nio"), crypto, .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "FirebaseAuthTests",
        dependencies: [
            "FirebaseAuth", "SuiteTesting", jwt, httpClient, logging,
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ConfigurationDocsTests",
        dependencies: [
            "AuthApp", "ChatApp", "ChatFanoutApp", "GatewayApp", "PaymentApp", "PresenceApp", "PushApp", "StudyApp", "WorkspaceApp", "ServiceCatalog",
            "ServiceKit",
            configuration,
        ],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "IntegrationTests",
        dependencies: ["Common", "TestSupport", "Kafka", "Events", "ServiceKit", "ServiceCatalog", "AccessTokens", httpClient, nioHTTP1, nioCore],
        swiftSettings: swiftSettings
    ),
]
var products: [Product] = [.executable(name: "chatsuite", targets: ["ChatSuiteCLI"])]
// Files a service serves as they are (the gateway: the OpenAPI document and the event schemas;
// docs/openapi.yaml and docs/schemas link to them).
let serviceResources: [String: [Resource]] = ["Gateway": [.copy("Resources/openapi.yaml"), .copy("Resources/schemas")]]
for s in services {
    targets.append(
        .target(
            name: "\(s.folder)App", dependencies: platform + s.extra, path: "Services/\(s.folder)/App", resources: serviceResources[s.folder],
            swiftSettings: swiftSettings))
    targets.append(
        .executableTarget(
            name: "\(s.folder)Server", dependencies: [.target(name: "\(s.folder)App"), "ServiceKit", configuration], path: "Services/\(s.folder)/Server",
            swiftSettings: swiftSettings))
    products.append(.executable(name: s.executable, targets: ["\(s.folder)Server"]))
}

let package = Package(
    name: "chatsuite",
    platforms: [.macOS(.v15)],
    products: products,
    // Exact versions (those the lead's Package.resolved pins): Package.resolved is not committed,
    // so these make every build (CI, deploy/Dockerfile, a fresh clone) resolve the same direct
    // dependencies. Packages only these depend on follow from them. Upgrading: change the
    // version here, `swift package update`, run the tests.
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", exact: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", exact: "2.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", exact: "1.4.0", traits: [.defaults, "CommandLineArguments"]),
        .package(url: "https://github.com/vapor/jwt-kit.git", exact: "5.8.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", exact: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/vapor/multipart-kit.git", exact: "4.7.1"),
        // APNs speaks HTTP/2 over TLS: push trusts an extra CA (tests' fake APNs) and the tests serve h2.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", exact: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", exact: "1.7.4"),
        // The tests read docs/openapi.yaml and check every answer against it (no external loading).
        .package(url: "https://github.com/mattpolzin/OpenAPIKit.git", exact: "6.4.0", traits: []),
        .package(url: "https://github.com/jpsim/Yams.git", exact: "6.2.2"),
        // OTLP over HTTP only (the gRPC exporter would build grpc-swift for nothing).
        .package(url: "https://github.com/swift-otel/swift-otel.git", exact: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", exact: "1.7.3"),
    ],
    targets: targets
)
