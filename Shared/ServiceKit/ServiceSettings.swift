import Configuration
import Database
import Events
import Foundation
import Kafka
import Logging
import Messaging

/// Settings every executable reads, from (highest priority first) command-line flags
/// (`--http-port 8081`), environment variables (`HTTP_PORT=8081`) and the service's defaults.
/// Every key is listed in docs/configuration.md.
public struct ServiceSettings: Sendable {
    public let serviceName: String
    public let reader: ConfigReader

    /// The platform's own defaults (below each service's, environment and flags); every key is in
    /// docs/configuration.md, which `ConfigurationDocsTests` check against this.
    public static let platformDefaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.host": "127.0.0.1",
        "http.port": 8080,
        "log.level": "info",
        "log.format": "text",
        "kafka.brokers": ConfigValue(.stringArray(["127.0.0.1:9092"]), isSecret: false),
        "kafka.startup-timeout-seconds": 10,
        "kafka.linger-ms": 0.0,
        "kafka.compression": "lz4",
        "kafka.fetch-wait-ms": 500,
        "kafka.delivery-fetch-min-bytes": 1,
        "kafka.delivery-fetch-batch-ms": 0,
        "kafka.delivery-reader": "native",
        "kafka.delivery-writer": "native",
        "kafka.fanout-reader": "native",
        "kafka.inbox-reader": "native",
        "kafka.security-protocol": "plaintext",
        "database.startup-timeout-seconds": 10,
        "database.max-connections": 20,
        "database.sslmode": "disable",
        "outbox.max-event-bytes": ConfigValue(.int(Outbox.defaultMaxEventBytes), isSecret: false),
        "events.schema-base-url": ConfigValue(.string(EventSchemaLocation.defaultBaseURL), isSecret: false),
        "inbox.retention-hours": 192,
        "inbox.prune-interval-seconds": 3600,
        "memory.trim-interval-seconds": 30,
        "memory.trim-after-growth-mib": 16,
        "event-loops": 0,
        "jwt.audience": "chatsuite",
        "jwt.issuer": "chatsuite-auth",
    ]

    /// - Parameters:
    ///   - defaults: the service's own defaults (e.g. its port), below env and CLI.
    ///   - environment / arguments: injectable for tests and the dev launcher.
    public init(
        serviceName: String,
        defaults: [AbsoluteConfigKey: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        arguments: [String] = CommandLine.arguments
    ) {
        self.serviceName = serviceName
        let secrets = SecretsSpecifier<String, String>.dynamic { key, _ in
            let k = key.lowercased()
            return k.contains("password") || k.contains("secret") || k.contains("private") || k.contains("database_url")
                || k.contains("database-url") || k.contains("token") || k.contains("sesac_keys") || k.contains("sesac-keys")
        }
        var base = Self.platformDefaults
        for (k, v) in defaults { base[k] = v }
        reader = ConfigReader(providers: [
            CommandLineArgumentsProvider(arguments: arguments, secretsSpecifier: secrets),
            EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: secrets),
            InMemoryProvider(name: "\(serviceName) defaults", values: base),
        ])
    }

    // Typed settings throw on a value that cannot be read (HTTP_PORT=abc) instead of silently
    // falling back to a default; the error names the key, the variable and the flag.

    public var httpHost: String { get throws { try string("http.host") } }
    public var httpPort: Int { get throws { try int("http.port") } }
    public var logLevel: Logger.Level {
        get throws {
            let text = try string("log.level").lowercased()
            guard let level = Logger.Level(rawValue: text) else {
                throw StartupError("invalid log.level (LOG_LEVEL, --log-level) '\(text)': use trace, debug, info, notice, warning, error or critical")
            }
            return level
        }
    }
    /// NIO event loops of the process (its server, HTTP and Kafka clients): 0 is one per core.
    public var eventLoops: Int {
        get throws {
            let loops = try int("event-loops")
            guard (0...256).contains(loops) else {
                throw StartupError("invalid event-loops (EVENT_LOOPS, --event-loops) \(loops): use 0 (one per core) up to 256")
            }
            return loops
        }
    }
    public var logFormat: Observability.LogFormat {
        get throws {
            let text = try string("log.format").lowercased()
            guard let format = Observability.LogFormat(rawValue: text) else {
                throw StartupError("invalid log.format (LOG_FORMAT, --log-format) '\(text)': use text or json")
            }
            return format
        }
    }
    /// Comma-separated in the environment (`KAFKA_BROKERS=a:9092,b:9092`) or on the command line.
    public var kafkaBrokers: String {
        get throws {
            do {
                return try reader.requiredStringArray(forKey: "kafka.brokers").joined(separator: ",")
            } catch {
                throw Self.invalid("kafka.brokers", error)
            }
        }
    }
    /// Producer batching delay: 0 (default) sends as soon as librdkafka's broker thread wakes; 5–20 ms
    /// favours throughput. The outbox relays batch by themselves (a pass hands over every row it read).
    public var kafkaLingerMilliseconds: Double {
        get throws {
            do { return try reader.requiredDouble(forKey: "kafka.linger-ms") } catch { throw Self.invalid("kafka.linger-ms", error) }
        }
    }
    /// The producers' compression codec: `lz4` (default), `zstd`, `snappy`, `gzip` or `none`.
    /// librdkafka's mock cluster (the embedded broker) keeps 5 MB of record batches per partition
    /// and walks them on every fetch, so uncompressed batches (fewer of them fit) cost it less;
    /// the dev launcher sets `none`.
    public var kafkaCompression: String {
        get throws {
            let value = try string("kafka.compression")
            let codecs = KafkaProducerConfiguration.compressionCodecs
            guard codecs.contains(value) else {
                throw StartupError("kafka.compression must be one of \(codecs.joined(separator: ", ")), not \(value)")
            }
            return value
        }
    }
    /// Longest a consumer fetch waits at the broker. Real Kafka answers as soon as data arrives,
    /// so this only bounds idle polling; librdkafka's mock cluster (the embedded broker) always
    /// waits the full time, so there it bounds latency and the dev launcher lowers it.
    public var kafkaFetchWaitMilliseconds: Int { get throws { try int("kafka.fetch-wait-ms") } }
    /// The fetch wait of the real-time path's two consumers: chat-fanout's `chat.message.v1`
    /// consumer and the gateway's delivery consumer; `kafka.fetch-wait-ms` when unset. On the
    /// embedded broker it is each hop's latency floor: 1 ms there halves the latency at low load
    /// for more idle polling (docs/benchmarks.md, part 8).
    public var kafkaDeliveryFetchWaitMilliseconds: Int {
        get throws {
            guard reader.string(forKey: "kafka.delivery-fetch-wait-ms") != nil else { return try kafkaFetchWaitMilliseconds }
            return try int("kafka.delivery-fetch-wait-ms")
        }
    }
    /// The `fetch.min.bytes` of the real-time path's two consumers: a fetch is answered once that
    /// much is there or its wait (`kafka.delivery-fetch-wait-ms`) is over. 1 (answer at once) by
    /// default; more trades up to that wait of latency for fewer, fuller fetches under load.
    public var kafkaDeliveryFetchMinBytes: Int {
        get throws {
            let value = try int("kafka.delivery-fetch-min-bytes")
            guard value >= 1 else { throw StartupError("kafka.delivery-fetch-min-bytes must be at least 1, not \(value)") }
            return value
        }
    }
    /// The gateway's delivery consumer under load: after a fetch that brought records, the next
    /// one waits up to this many milliseconds for more (`fetchBatchMilliseconds(_:)`). 0 (default):
    /// off. chat-fanout's message consumer has its own (`fanout.fetch-batch-ms`).
    public var kafkaDeliveryFetchBatchMilliseconds: Int {
        get throws { try fetchBatchMilliseconds("kafka.delivery-fetch-batch-ms") }
    }
    /// A consumer's batch wait under load, read from `key`: after a fetch that brought records, the
    /// next one waits up to this many milliseconds for more (`KafkaConsumerConfiguration.fetchBatchWaitMilliseconds`),
    /// so a busy consumer fetches and wakes up once per batch, not once per record; an idle one
    /// polls as before. 0: off. At most 1 000.
    public func fetchBatchMilliseconds(_ key: String) throws -> Int {
        let value = try int(key)
        guard (0...1_000).contains(value) else { throw StartupError("\(key) must be between 0 and 1000, not \(value)") }
        return value
    }
    /// How the gateway reads its deliveries: `native` (default; `KafkaPartitionReader` on an event
    /// loop, for a plaintext cluster) or `librdkafka` (a librdkafka consumer, as TLS and SASL
    /// always are).
    public var kafkaDeliveryReaderIsNative: Bool { get throws { try nativeOrLibrdkafka("kafka.delivery-reader") } }
    /// How chat-fanout writes deliveries: `native` (default; `KafkaRecordWriter`, its consumer's
    /// poll thread sending and awaiting the Produce requests itself, for a plaintext cluster) or
    /// `librdkafka` (an idempotent librdkafka producer, as TLS and SASL always are).
    public var kafkaDeliveryWriterIsNative: Bool { get throws { try nativeOrLibrdkafka("kafka.delivery-writer") } }
    /// How chat-fanout reads `chat.message.v1` and the topics it routes with it: `native` (default;
    /// its consumer's poll thread fetches the assigned partitions itself on blocking sockets while
    /// librdkafka keeps the group, for a plaintext cluster; uncompressed and lz4 batches are read
    /// there, a batch of another codec hands them back to librdkafka) or `librdkafka` (librdkafka fetches, as under TLS and SASL always).
    public var kafkaFanoutReaderIsNative: Bool { get throws { try nativeOrLibrdkafka("kafka.fanout-reader") } }
    /// How the services' inbox consumers read their topics: `native` (default; the consumer's
    /// poll thread fetches the assigned partitions itself and waits while a batch is applied, for
    /// a plaintext cluster, as `kafka.fanout-reader`) or `librdkafka` (librdkafka fetches).
    public var kafkaInboxReaderIsNative: Bool { get throws { try nativeOrLibrdkafka("kafka.inbox-reader") } }

    private func nativeOrLibrdkafka(_ key: String) throws -> Bool {
        let value = try string(key)
        switch value {
        case "native": return true
        case "librdkafka": return false
        default: throw StartupError("\(key) must be native or librdkafka, not \(value)")
        }
    }
    public var kafkaStartupTimeout: Duration { get throws { .seconds(try int("kafka.startup-timeout-seconds")) } }
    /// How often the process hands its allocator's free pages back to the kernel (`MemoryTrim`);
    /// nil (0) never.
    public var memoryTrimInterval: Duration? {
        get throws {
            let seconds = try int("memory.trim-interval-seconds")
            guard (0...86_400).contains(seconds) else { throw StartupError("memory.trim-interval-seconds must be within 0…86400, not \(seconds)") }
            return seconds == 0 ? nil : .seconds(seconds)
        }
    }
    /// How much the resident size must grow since the last trim before a settled burst is trimmed
    /// at once (`MemoryTrim`, `TrimPolicy`), in bytes; nil (0) only on the interval.
    public var memoryTrimAfterGrowthBytes: Int? {
        get throws {
            let mebibytes = try int("memory.trim-after-growth-mib")
            guard (0...65_536).contains(mebibytes) else {
                throw StartupError("memory.trim-after-growth-mib must be within 0…65536, not \(mebibytes)")
            }
            return mebibytes == 0 ? nil : mebibytes << 20
        }
    }
    /// TLS / SASL towards the brokers (`kafka.security-protocol`, `kafka.sasl-mechanism`,
    /// `kafka.sasl-username`, `kafka.sasl-password` or `kafka.sasl-password-file`,
    /// `kafka.ssl-ca-location`); plaintext when none is set.
    public var kafkaSecurity: KafkaSecurity {
        get throws {
            var password = reader.string(forKey: "kafka.sasl-password", isSecret: true)
            if password?.isEmpty ?? true, let path = reader.string(forKey: "kafka.sasl-password-file"), !path.isEmpty {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    throw StartupError("cannot read kafka.sasl-password-file (KAFKA_SASL_PASSWORD_FILE) at \(path)")
                }
                // A file written by `echo` ends in a newline that is not part of the password.
                password = text.hasSuffix("\n") ? String(text.dropLast()) : text
            }
            let security: KafkaSecurity
            do {
                security = try KafkaSecurity(
                    protocol: reader.string(forKey: "kafka.security-protocol"), saslMechanism: reader.string(forKey: "kafka.sasl-mechanism"),
                    saslUsername: reader.string(forKey: "kafka.sasl-username"), saslPassword: password,
                    caLocation: reader.string(forKey: "kafka.ssl-ca-location"))
            } catch {
                throw StartupError("invalid Kafka security settings: \(error)")
            }
            if let ca = security.caLocation, !FileManager.default.isReadableFile(atPath: ca) {
                throw StartupError("kafka.ssl-ca-location (KAFKA_SSL_CA_LOCATION) \(ca) is not a readable file")
            }
            return security
        }
    }
    public var databaseStartupTimeout: Duration { get throws { .seconds(try int("database.startup-timeout-seconds")) } }
    /// The largest encoded event a service may write to its outbox (a larger one is refused with
    /// E11 before the transaction commits); 1 KiB to 900 000 bytes, under what brokers accept.
    public var outboxMaxEventBytes: Int {
        get throws {
            let value = try int("outbox.max-event-bytes")
            guard (1024...Outbox.maxEventBytesCeiling).contains(value) else {
                throw StartupError(
                    "outbox.max-event-bytes (OUTBOX_MAX_EVENT_BYTES, --outbox-max-event-bytes) must be 1024 to \(Outbox.maxEventBytesCeiling), not \(value)")
            }
            return value
        }
    }
    /// How long processed event ids stay in the inbox. It must outlast the topics' retention
    /// (none is set, so Kafka's default of 7 days applies): a redelivered event must still be found.
    public var inboxRetention: Duration {
        get throws {
            let hours = try int("inbox.retention-hours")
            guard hours > Topic.retentionHours else {
                throw StartupError(
                    "inbox.retention-hours (INBOX_RETENTION_HOURS, --inbox-retention-hours) must be more than the topics' retention of \(Topic.retentionHours) hours, not \(hours)"
                )
            }
            return .seconds(hours * 3600)
        }
    }
    /// How often the inbox is pruned (at least a minute).
    public var inboxPruneInterval: Duration {
        get throws {
            let seconds = try int("inbox.prune-interval-seconds")
            guard seconds >= 60 else {
                throw StartupError(
                    "inbox.prune-interval-seconds (INBOX_PRUNE_INTERVAL_SECONDS, --inbox-prune-interval-seconds) must be at least 60, not \(seconds)")
            }
            return .seconds(seconds)
        }
    }
    /// Where the admin listener (health and metrics, for a service whose own port is public)
    /// binds: `admin.host` (default `http.host`) and `admin.port` (default `http.port` + 1000;
    /// with `http.port` 0, an ephemeral port too).
    public var adminHost: String {
        get throws {
            if let host = reader.string(forKey: "admin.host") { return host }
            return try httpHost
        }
    }
    public var adminPort: Int {
        get throws {
            if reader.string(forKey: "admin.port") != nil { return try int("admin.port") }
            let http = try httpPort
            return http == 0 ? 0 : http + Self.adminPortOffset
        }
    }
    public static let adminPortOffset = 1000

    /// Where the gateway serves the event schemas, as clients of the events reach it: each event's
    /// CloudEvents `dataschema` is `<this>/<type>.json`. An absolute http(s) URL.
    public var eventsSchemaBaseURL: String {
        get throws {
            let value = try string("events.schema-base-url")
            guard let url = URL(string: value), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
                url.query == nil, url.fragment == nil
            else {
                throw StartupError(
                    "events.schema-base-url (EVENTS_SCHEMA_BASE_URL, --events-schema-base-url) must be an absolute http(s) URL without query, not \(value)")
            }
            return value
        }
    }
    /// A stable id for this replica (consumer client ids, gateway ids); defaults to host + pid.
    public var instanceId: String {
        reader.string(forKey: "instance.id") ?? "\(serviceName)-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }

    public func string(_ key: String, isSecret: Bool = false) throws -> String {
        do { return try reader.requiredString(forKey: ConfigKey(key), isSecret: isSecret) } catch { throw Self.invalid(key, error) }
    }

    /// A secret given inline (`JWT_PRIVATE_KEY=…`) or as a file (`JWT_PRIVATE_KEY_FILE=/run/secrets/…`,
    /// the form container secrets use).
    public func secretText(_ key: String) throws -> String {
        if let inline = reader.string(forKey: ConfigKey(key), isSecret: true), !inline.isEmpty { return inline }
        if let path = reader.string(forKey: ConfigKey(key + "-file")), !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), !text.isEmpty else {
                throw StartupError("cannot read \(key)-file at \(path)")
            }
            return text
        }
        let env = key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
        throw StartupError("\(key) is not set (\(env) or \(env)_FILE)")
    }

    public func int(_ key: String) throws -> Int {
        do { return try reader.requiredInt(forKey: ConfigKey(key)) } catch { throw Self.invalid(key, error) }
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    public func bool(_ key: String) throws -> Bool {
        switch try string(key).lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        case let other: throw StartupError("\(key) must be true or false, not \(other)")
        }
    }

    static func invalid(_ key: String, _ error: any Error) -> StartupError {
        let env = key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
        let flag = "--" + key.replacingOccurrences(of: ".", with: "-")
        return StartupError("invalid or missing setting \(key) (\(env), \(flag)): \(error)")
    }

    /// The service's database, or nil when `DATABASE_URL` is not set.
    public func database() throws -> DatabaseConfiguration? {
        guard let url = reader.string(forKey: "database.url", isSecret: true), !url.isEmpty else { return nil }
        var config: DatabaseConfiguration
        do { config = try DatabaseConfiguration(url: url) } catch { throw StartupError("database.url (DATABASE_URL): \(error)") }
        let maximumConnections = try int("database.max-connections")
        guard maximumConnections >= 1 else {
            throw StartupError("database.max-connections (DATABASE_MAX_CONNECTIONS) must be at least 1, not \(maximumConnections)")
        }
        config.maximumConnections = maximumConnections
        // The URL's own `sslmode` / `sslrootcert` win over the settings (libpq's precedence).
        if config.sslMode == nil {
            do {
                config.sslMode = try DatabaseConfiguration.SSLMode(parsing: try string("database.sslmode"))
            } catch let error as DatabaseConfiguration.ParseError {
                throw StartupError("database.sslmode (DATABASE_SSLMODE): \(error)")
            }
        }
        if config.sslRootCertificate == nil, let path = reader.string(forKey: "database.ssl-root-cert"), !path.isEmpty {
            config.sslRootCertificate = path
        }
        if let path = config.sslRootCertificate {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw StartupError("the PostgreSQL root certificate \(path) (sslrootcert, DATABASE_SSL_ROOT_CERT) is not a readable file")
            }
            guard config.sslMode == .verifyCA || config.sslMode == .verifyFull else {
                throw StartupError("a PostgreSQL root certificate is set but sslmode is \(config.sslMode?.rawValue ?? "disable"): use verify-ca or verify-full")
            }
        }
        return config
    }

    public func requiredDatabase() throws -> DatabaseConfiguration {
        guard let config = try database() else { throw StartupError("DATABASE_URL is not set (postgres://user:password@host:port/database)") }
        return config
    }
}

/// A clear, one-line reason why an executable cannot start.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
