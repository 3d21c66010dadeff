import Configuration
import Database
import HTTPTypes
import ServiceKit
import Testing

@Suite("Service settings: CLI > environment > defaults")
struct ServiceSettingsTests {
    @Test func priorityOrder() throws {
        let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8081]
        let onlyDefaults = ServiceSettings(serviceName: "auth", defaults: defaults, environment: [:], arguments: ["auth"])
        #expect(try onlyDefaults.httpPort == 8081)
        let env = ServiceSettings(serviceName: "auth", defaults: defaults, environment: ["HTTP_PORT": "9001"], arguments: ["auth"])
        #expect(try env.httpPort == 9001)
        let cli = ServiceSettings(serviceName: "auth", defaults: defaults, environment: ["HTTP_PORT": "9001"], arguments: ["auth", "--http-port", "9002"])
        #expect(try cli.httpPort == 9002)
    }

    @Test func brokerListsFromEnvironmentAndFlags() throws {
        let env = ServiceSettings(serviceName: "x", environment: ["KAFKA_BROKERS": "a:9092,b:9092"], arguments: ["x"])
        #expect(try env.kafkaBrokers == "a:9092,b:9092")
        let cli = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--kafka-brokers", "c:9092,d:9092"])
        #expect(try cli.kafkaBrokers == "c:9092,d:9092")
        let none = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"])
        #expect(try none.kafkaBrokers == "127.0.0.1:9092")
    }

    @Test func invalidValuesAreErrorsNotSilentDefaults() {
        let settings = ServiceSettings(serviceName: "x", environment: ["HTTP_PORT": "abc", "LOG_LEVEL": "loud"], arguments: ["x"])
        #expect(throws: StartupError.self) { try settings.httpPort }
        #expect(throws: StartupError.self) { try settings.logLevel }
    }

    @Test("event loops: 0 (one per core) unless set, from the environment or a flag; a negative count, too many or a word refused at startup")
    func eventLoops() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).eventLoops == 0)
        #expect(try ServiceSettings(serviceName: "x", environment: ["EVENT_LOOPS": "1"], arguments: ["x"]).eventLoops == 1)
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--event-loops", "4"]).eventLoops == 4)
        for bad in ["-1", "257", "many"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["EVENT_LOOPS": bad], arguments: ["x"])
            #expect(throws: StartupError.self, "\(bad)") { try settings.eventLoops }
        }
    }

    /// librdkafka waits in whole milliseconds, so the old 0.5 held a lone record about 1.1 ms.
    @Test("the producers' linger: 0 unless set, a fraction read, a word refused at startup")
    func producerLinger() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).kafkaLingerMilliseconds == 0)
        #expect(try ServiceSettings(serviceName: "x", environment: ["KAFKA_LINGER_MS": "0.5"], arguments: ["x"]).kafkaLingerMilliseconds == 0.5)
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--kafka-linger-ms", "5"]).kafkaLingerMilliseconds == 5)
        let bad = ServiceSettings(serviceName: "x", environment: ["KAFKA_LINGER_MS": "soon"], arguments: ["x"])
        #expect(throws: StartupError.self) { try bad.kafkaLingerMilliseconds }
    }

    @Test("the real-time consumers' fetch.min.bytes: 1 unless set, a count of bytes, 0 or a word refused at startup")
    func deliveryFetchMinBytes() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).kafkaDeliveryFetchMinBytes == 1)
        let set = ServiceSettings(serviceName: "x", environment: ["KAFKA_DELIVERY_FETCH_MIN_BYTES": "8192"], arguments: ["x"])
        #expect(try set.kafkaDeliveryFetchMinBytes == 8192)
        for bad in ["0", "-1", "lots"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["KAFKA_DELIVERY_FETCH_MIN_BYTES": bad], arguments: ["x"])
            #expect(throws: StartupError.self, "\(bad)") { try settings.kafkaDeliveryFetchMinBytes }
        }
    }

    @Test("the gateway's delivery batch wait: 0 (off) unless set, 0 to 1 000 ms, anything else refused at startup")
    func deliveryFetchBatch() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).kafkaDeliveryFetchBatchMilliseconds == 0)
        let set = ServiceSettings(serviceName: "x", environment: ["KAFKA_DELIVERY_FETCH_BATCH_MS": "1"], arguments: ["x"])
        #expect(try set.kafkaDeliveryFetchBatchMilliseconds == 1)
        for bad in ["-1", "1001", "soon"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["KAFKA_DELIVERY_FETCH_BATCH_MS": bad], arguments: ["x"])
            #expect(throws: StartupError.self, "\(bad)") { try settings.kafkaDeliveryFetchBatchMilliseconds }
        }
    }

    @Test("the producers' codec: lz4 unless set, any librdkafka codec by name, anything else refused at startup")
    func kafkaCompression() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).kafkaCompression == "lz4")
        #expect(try ServiceSettings(serviceName: "x", environment: ["KAFKA_COMPRESSION": "none"], arguments: ["x"]).kafkaCompression == "none")
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--kafka-compression", "zstd"]).kafkaCompression == "zstd")
        let bad = ServiceSettings(serviceName: "x", environment: ["KAFKA_COMPRESSION": "brotli"], arguments: ["x"])
        #expect(throws: StartupError.self) { try bad.kafkaCompression }
    }

    @Test("the real-time consumers' fetch wait follows kafka.fetch-wait-ms unless set itself")
    func deliveryFetchWait() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).kafkaDeliveryFetchWaitMilliseconds == 500)
        #expect(try ServiceSettings(serviceName: "x", environment: ["KAFKA_FETCH_WAIT_MS": "5"], arguments: ["x"]).kafkaDeliveryFetchWaitMilliseconds == 5)
        let own = ServiceSettings(serviceName: "x", environment: ["KAFKA_FETCH_WAIT_MS": "5", "KAFKA_DELIVERY_FETCH_WAIT_MS": "1"], arguments: ["x"])
        #expect(try own.kafkaDeliveryFetchWaitMilliseconds == 1)
        #expect(try own.kafkaFetchWaitMilliseconds == 5)
        let bad = ServiceSettings(serviceName: "x", environment: ["KAFKA_DELIVERY_FETCH_WAIT_MS": "soon"], arguments: ["x"])
        #expect(throws: StartupError.self) { try bad.kafkaDeliveryFetchWaitMilliseconds }
    }

    @Test func databaseURLIsOptionalAndItsPasswordNeverPrinted() throws {
        let none = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"])
        #expect(try none.database() == nil)
        let some = ServiceSettings(serviceName: "x", environment: ["DATABASE_URL": "postgres://u:p%40ss@db:5433/app"], arguments: ["x"])
        let db = try #require(try some.database())
        #expect(db.password == "p@ss" && db.host == "db" && db.port == 5433 && db.database == "app")
        #expect(db.description == "postgres://u@db:5433/app")
    }

    @Test("the pool size: 20 unless set; zero or negative refused at start")
    func databasePoolSize() throws {
        let url = "postgres://u@db/app"
        let unset = try #require(try ServiceSettings(serviceName: "x", environment: ["DATABASE_URL": url], arguments: ["x"]).database())
        #expect(unset.maximumConnections == 20)
        let set = try #require(
            try ServiceSettings(serviceName: "x", environment: ["DATABASE_URL": url, "DATABASE_MAX_CONNECTIONS": "3"], arguments: ["x"]).database())
        #expect(set.maximumConnections == 3)
        for bad in ["0", "-1"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["DATABASE_URL": url, "DATABASE_MAX_CONNECTIONS": bad], arguments: ["x"])
            #expect(throws: StartupError.self, "\(bad)") { try settings.database() }
        }
    }

    @Test func outboxAndInboxLimits() throws {
        let defaults = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"])
        #expect(try defaults.outboxMaxEventBytes == 512 * 1024)
        #expect(try defaults.inboxRetention == .seconds(192 * 3600))
        #expect(try defaults.inboxPruneInterval == .seconds(3600))
        let set = ServiceSettings(serviceName: "x", environment: ["OUTBOX_MAX_EVENT_BYTES": "100000", "INBOX_RETENTION_HOURS": "240"], arguments: ["x"])
        #expect(try set.outboxMaxEventBytes == 100_000)
        #expect(try set.inboxRetention == .seconds(240 * 3600))
        // Over what brokers accept; an inbox that forgets ids while the topics still hold them.
        let unsafe = ServiceSettings(
            serviceName: "x", environment: ["OUTBOX_MAX_EVENT_BYTES": "2000000", "INBOX_RETENTION_HOURS": "168", "INBOX_PRUNE_INTERVAL_SECONDS": "1"],
            arguments: ["x"]
        )
        #expect(throws: StartupError.self) { try unsafe.outboxMaxEventBytes }
        #expect(throws: StartupError.self) { try unsafe.inboxRetention }
        #expect(throws: StartupError.self) { try unsafe.inboxPruneInterval }
    }

    @Test func eventsSchemaBaseURL() throws {
        let defaults = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"])
        #expect(try defaults.eventsSchemaBaseURL == "http://127.0.0.1:8080/v1/schemas")
        let set = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--events-schema-base-url", "https://api.example.com/v1/schemas"])
        #expect(try set.eventsSchemaBaseURL == "https://api.example.com/v1/schemas")
        for bad in ["/v1/schemas", "ftp://h/v1/schemas", "http:///x", "http://h/v1/schemas?x=1", "nope"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["EVENTS_SCHEMA_BASE_URL": bad], arguments: ["x"])
            #expect(throws: StartupError.self, "\(bad)") { try settings.eventsSchemaBaseURL }
        }
    }

    @Test func anEventTooLargeForTheOutboxIsABadRequest() {
        let mapped = ErrorMiddleware<SuiteRequestContext>.map(OutboxEventTooLarge(eventType: "t", bytes: 600_000, limit: 524_288))
        #expect(mapped.code == "E11" && mapped.status == .badRequest)
    }
}
