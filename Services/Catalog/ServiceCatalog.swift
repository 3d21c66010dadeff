/// The suite's executables, one entry each: the single place that says which services exist, on
/// which port, with which database, files volume, keys and client routes. The dev launcher
/// (`chatsuite dev`), the test harness (`Stack.run(services:)`), the gateway (upstream settings,
/// its route table) and each service's own defaults read it; a test checks docker-compose.yml,
/// deploy/postgres/init-databases.sh and docs/configuration.md against it.
///
/// Adding a service: one entry here, `all` below, the folder `Services/<Name>/{App,Server}` and
/// its name in Package.swift's `serviceFolders`; `ServiceCatalogTests` names what the deployment
/// files then lack (docs/adding-a-service.md).
public struct ServiceEntry: Sendable, Hashable, CustomStringConvertible {
    /// Executable, product, compose service, log label and settings prefix (`chat-fanout`).
    public let name: String
    /// Default `http.port` (`chatsuite dev`: its `--port` plus `port - ServiceEntry.gatewayPort`).
    public let port: Int
    /// The PostgreSQL database the service owns (nil: stateless).
    public let database: Database?
    /// Whether it keeps files on a volume of its own (`<name>.files-directory`).
    public let storesFiles: Bool
    /// Its part in access tokens: auth signs them, the gateway verifies them.
    public let tokenKey: TokenKey?
    /// Whether it is the edge: it gets the app keys and every upstream's URL.
    public let isEdge: Bool
    /// Client paths the gateway forwards to it (empty: no client REST surface).
    public let routes: [Route]

    public struct Database: Sendable, Hashable {
        /// Database and owning role in compose (`auth`); `chatsuite dev` prefixes `chatsuite_`.
        public let name: String
        /// Extensions the init script creates (the service's role may not).
        public let extensions: [String]

        public init(_ name: String, extensions: [String] = []) {
            self.name = name
            self.extensions = extensions
        }

        /// The database's name under `chatsuite dev`, beside other databases on one server.
        public var devName: String { "chatsuite_\(name)" }
    }

    public enum TokenKey: Sendable, Hashable {
        /// `jwt.private-key` / `JWT_PRIVATE_KEY_FILE`.
        case signing
        /// `jwt.public-key` / `JWT_PUBLIC_KEY_FILE`.
        case verifying

        public var setting: String { self == .signing ? "jwt.private-key" : "jwt.public-key" }
    }

    /// A client path pattern the gateway forwards: literal segments, `*` (one segment), `**` (the
    /// rest, possibly nothing). The most specific matching pattern wins, whichever service
    /// declares it, so declarations need no order.
    public struct Route: Sendable, Hashable {
        /// Upper-case HTTP method, or nil for any.
        public let method: String?
        public let pattern: String
        /// No access token at the edge (sign-up, login, refresh).
        public let isPublic: Bool
        /// A legacy read its client sends without a token (Smooth's chat history): public while
        /// the edge's compatibility setting allows it, and checked when a token comes anyway.
        public let isAnonymousCompatible: Bool

        init(method: String?, pattern: String, isPublic: Bool, isAnonymousCompatible: Bool = false) {
            self.method = method
            self.pattern = pattern
            self.isPublic = isPublic
            self.isAnonymousCompatible = isAnonymousCompatible
        }

        public static func any(_ pattern: String) -> Route { Route(method: nil, pattern: pattern, isPublic: false) }
        public static func publicPost(_ pattern: String) -> Route { Route(method: "POST", pattern: pattern, isPublic: true) }
        public static func publicGet(_ pattern: String) -> Route { Route(method: "GET", pattern: pattern, isPublic: true) }
        public static func get(_ pattern: String) -> Route { Route(method: "GET", pattern: pattern, isPublic: false) }
        public static func anonymousCompatibleGet(_ pattern: String) -> Route {
            Route(method: "GET", pattern: pattern, isPublic: false, isAnonymousCompatible: true)
        }
    }

    public init(
        name: String, port: Int, database: Database? = nil, storesFiles: Bool = false, tokenKey: TokenKey? = nil,
        isEdge: Bool = false, routes: [Route] = []
    ) {
        self.name = name
        self.port = port
        self.database = database
        self.storesFiles = storesFiles
        self.tokenKey = tokenKey
        self.isEdge = isEdge
        self.routes = routes
    }

    public var description: String { name }

    /// The edge's health and metrics are on its admin listener at its port + this (the setting
    /// `admin.port`'s default, `ServiceSettings.adminPortOffset`), not on the public port.
    public static let adminPortOffset = 1000

    /// Where the service answers `/health/ready` and `/metrics` when it serves HTTP on `httpPort`.
    public func healthPort(httpPort: Int) -> Int { isEdge ? httpPort + Self.adminPortOffset : httpPort }

    /// The gateway's port; the others' ports are offsets from it in `chatsuite dev`.
    public static let gatewayPort = 8080
    /// How many consecutive ports from the gateway's the suite takes (`chatsuite dev --port` and up).
    public static var portSpan: Int { (all.map(\.port).max() ?? gatewayPort) - gatewayPort + 1 }

    /// Settings key of the base URL the gateway forwards to (`chat.url`); only for routed services.
    public var urlSetting: String { "\(name).url" }
    /// Settings key of the files volume (`chat.files-directory`).
    public var filesDirectorySetting: String { "\(name).files-directory" }

    /// The environment variable of a settings key (`chat-fanout.url` → `CHAT_FANOUT_URL`), as
    /// the services read it.
    public static func environmentVariable(_ key: String) -> String {
        String(key.uppercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
    }
}

extension ServiceEntry {
    public static let gateway = ServiceEntry(name: "gateway", port: 8080, tokenKey: .verifying, isEdge: true)

    public static let auth = ServiceEntry(
        name: "auth", port: 8081, database: .init("auth"), storesFiles: true, tokenKey: .signing,
        routes: [
            .publicPost("/v1/users/validation/email"),
            .publicPost("/v1/users/join"),
            .publicPost("/v1/users/login"),
            .publicPost("/v1/users/login/kakao"),
            .publicPost("/v1/users/login/apple"),
            // Refresh carries an expired token on purpose; auth verifies it itself.
            .publicGet("/v1/auth/refresh"),
            .any("/v1/users/**"),
            .any("/v1/friends/**"),
            .any("/v1/static/profiles/**"),
            // Gen A (Lilac, docs/generation-a.md): the edge maps its requests onto `/gena/v1/...`.
            .publicPost("/v2/users/login"),
            .publicPost("/gena/v1/users/join"),
            .publicPost("/gena/v1/users/login"),
            .publicPost("/gena/v1/users/login/kakao"),
            .publicPost("/gena/v1/users/login/apple"),
            .any("/gena/v1/users/my"),
            .any("/gena/v1/users/my/image"),
            .any("/gena/v1/users/logout"),
            .any("/gena/v1/users/deviceToken"),
            .get("/gena/v1/users/*"),
            // Smooth's `/auth-server` (docs/smooth-api.md): the edge maps its prefix onto `/smooth/auth`.
            .publicPost("/smooth/auth/sign-in"),
            // The access token may have expired: auth checks it (and the refresh token) itself.
            .publicPost("/smooth/auth/refresh"),
            .publicPost("/smooth/auth/sign-up"),
            .publicPost("/smooth/auth/send-mail"),
            .publicGet("/smooth/auth/check-email"),
            // Profile images as Smooth's app loads them: plain URLs, no token (random file names).
            .publicGet("/smooth/auth/static/profiles/*"),
            .any("/smooth/auth/**"),
        ]
    )

    public static let workspace = ServiceEntry(
        name: "workspace", port: 8082, database: .init("workspace", extensions: ["pg_trgm"]), storesFiles: true,
        routes: [
            .any("/v1/workspaces/**"), .any("/v1/invites/*"), .any("/v1/static/workspaces/**"),
            // Gen A: workspaces by integer id, channels by name (docs/generation-a.md).
            .any("/gena/v1/workspaces"), .any("/gena/v1/workspaces/**"),
            // Smooth's `/community-server` (its DM rooms are chat's); community icons are loaded
            // by URL without a token, as Smooth's public image URLs were.
            .publicGet("/smooth/community/icons/*"),
            .any("/smooth/community/**"),
        ]
    )

    public static let chat = ServiceEntry(
        name: "chat", port: 8083, database: .init("chat", extensions: ["pg_trgm"]), storesFiles: true,
        routes: [
            .any("/v1/workspaces/*/channels/*/chats/**"),
            .any("/v1/workspaces/*/channels/*/unreads"),
            .any("/v1/workspaces/*/channels/*/read"),
            .any("/v1/workspaces/*/chats/search"),
            .any("/v1/workspaces/*/unreads"),
            .any("/v1/workspaces/*/dms/**"),
            // Gen A: a channel's chats and unreads by the channel's name.
            .any("/gena/v1/workspaces/*/channels/*/chats"),
            .any("/gena/v1/workspaces/*/channels/*/unreads"),
            // Personal rooms (friends and groups, outside workspaces).
            .any("/v1/rooms"),
            .any("/v1/rooms/**"),
            // Attachments (`/v1/static/<yyyyMMdd>/<file>`); profiles and covers are more specific.
            .any("/v1/static/**"),
            // Smooth's `/chat-server`; its client reads history without a token.
            .anonymousCompatibleGet("/smooth/chat/community"),
            .anonymousCompatibleGet("/smooth/chat/direct"),
            // Attachments of live messages, loaded by URL without a token (UUIDv7 names).
            .publicGet("/smooth/chat/files/*"),
            .any("/smooth/chat/**"),
            // Smooth's DM and group rooms sit under `/community-server` but are chat's; a group's
            // icon is loaded by URL, without a token.
            .publicGet("/smooth/community/room/icons/*"),
            .any("/smooth/community/room"),
            .any("/smooth/community/room/**"),
        ]
    )

    /// Stateless and horizontally scalable (`docker-compose up --scale chat-fanout=N`).
    public static let chatFanout = ServiceEntry(name: "chat-fanout", port: 8084)

    public static let presence = ServiceEntry(
        name: "presence", port: 8085, database: .init("presence"), routes: [.any("/v1/workspaces/*/presence")]
    )

    public static let payment = ServiceEntry(
        name: "payment", port: 8086, database: .init("payment"), routes: [.any("/v1/store/**"), .any("/gena/v1/store/pay/validation")])

    /// Every executable, the edge first (start order of `chatsuite dev`).
    /// Notifications to phones for messages their users are not online to see.
    public static let push = ServiceEntry(
        name: "push", port: 8087, database: .init("push"),
        routes: [.any("/v1/workspaces/*/channels/*/notifications"), .any("/v1/workspaces/*/dms/*/notifications")]
    )

    /// The study-matching app's server (client contract §3): its client paths `/v1/user…`,
    /// `/v1/queue…` and `/v1/chat/…` reach it under `/study` through the gateway's study edge
    /// (no `SesacKey`, no suite token: the service verifies the Firebase `idtoken` itself).
    public static let study = ServiceEntry(
        name: "study", port: 8088, database: .init("study", extensions: ["cube", "earthdistance"]),
        routes: [.any("/study/v1/**")]
    )

    public static let all: [ServiceEntry] = [.gateway, .auth, .workspace, .chat, .chatFanout, .presence, .payment, .push, .study]

    /// The services the gateway forwards client requests to.
    public static var upstreams: [ServiceEntry] { all.filter { !$0.routes.isEmpty } }

    public static func named(_ name: String) -> ServiceEntry? { all.first { $0.name == name } }
}
