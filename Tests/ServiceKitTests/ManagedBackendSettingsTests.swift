import Database
import Foundation
import Kafka
import ServiceKit
import Testing

/// Managed Kafka (TLS, SASL) and managed PostgreSQL (`sslmode`): the settings operators give map
/// to the right librdkafka properties and PostgresNIO modes, and a value that cannot work stops
/// the executable at start with a message naming the setting, never the secret.
@Suite("Settings for managed Kafka and PostgreSQL")
struct ManagedBackendSettingsTests {
    static func settings(_ environment: [String: String]) -> ServiceSettings {
        ServiceSettings(serviceName: "x", environment: environment, arguments: ["x"])
    }

    /// The `StartupError`'s text, or nil when reading the value did not throw one.
    static func startupError<T>(_ read: () throws -> T) -> String? {
        do {
            _ = try read()
            return nil
        } catch {
            return (error as? StartupError)?.description ?? "not a StartupError: \(error)"
        }
    }

    @Test("no Kafka security settings: plaintext, nothing but security.protocol")
    func kafkaDefault() throws {
        let security = try Self.settings([:]).kafkaSecurity
        #expect(security == .plaintext)
        #expect(security.properties == ["security.protocol": "plaintext"])
        // compose passes the unset ones as empty strings.
        let empty = try Self.settings([
            "KAFKA_SECURITY_PROTOCOL": "", "KAFKA_SASL_MECHANISM": "", "KAFKA_SASL_USERNAME": "", "KAFKA_SASL_PASSWORD": "", "KAFKA_SSL_CA_LOCATION": "",
        ]).kafkaSecurity
        #expect(empty == .plaintext)
    }

    @Test("SASL over TLS maps to security.protocol, sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location")
    func kafkaSASLSSL() throws {
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("kafka-ca-\(UUID().uuidString).pem")
        try "-----BEGIN CERTIFICATE-----\n".write(to: ca, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: ca) }
        let security = try Self.settings([
            "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_MECHANISM": "scram-sha-512", "KAFKA_SASL_USERNAME": "svc",
            "KAFKA_SASL_PASSWORD": "s3cret pw", "KAFKA_SSL_CA_LOCATION": ca.path,
        ]).kafkaSecurity
        #expect(
            security.properties == [
                "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "svc", "sasl.password": "s3cret pw",
                "ssl.ca.location": ca.path,
            ])
        #expect(!security.description.contains("s3cret"))
        #expect(security.description.contains("SCRAM-SHA-512") && security.description.contains("svc"))
        // TLS alone, and SASL PLAIN without TLS.
        #expect(try Self.settings(["KAFKA_SECURITY_PROTOCOL": "ssl"]).kafkaSecurity.properties == ["security.protocol": "ssl"])
        let plain = try Self.settings([
            "KAFKA_SECURITY_PROTOCOL": "sasl_plaintext", "KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p",
        ]).kafkaSecurity
        #expect(plain.properties["sasl.mechanisms"] == "PLAIN" && plain.properties["security.protocol"] == "sasl_plaintext")
    }

    @Test("the SASL password may come from a file (KAFKA_SASL_PASSWORD_FILE), without its final newline")
    func kafkaPasswordFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kafka-pw-\(UUID().uuidString)")
        try "from-file\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let security = try Self.settings([
            "KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD_FILE": file.path,
        ]).kafkaSecurity
        #expect(security.sasl?.password == "from-file")
    }

    @Test("an unknown protocol or mechanism, SASL without credentials, or settings the protocol ignores are startup errors")
    func kafkaInvalid() {
        let cases: [([String: String], String)] = [
            (["KAFKA_SECURITY_PROTOCOL": "tls"], "KAFKA_SECURITY_PROTOCOL 'tls' is not supported"),
            (["KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"], "needs KAFKA_SASL_MECHANISM"),
            (
                ["KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "KAFKA_SASL_MECHANISM": "GSSAPI", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"],
                "KAFKA_SASL_MECHANISM 'GSSAPI' is not supported"
            ),
            (
                ["KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u"],
                "needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
            ),
            (["KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "hunter2"], "KAFKA_SASL_* is set but KAFKA_SECURITY_PROTOCOL is plaintext"),
            (
                [
                    "KAFKA_SECURITY_PROTOCOL": "sasl_plaintext", "KAFKA_SSL_CA_LOCATION": "/ca.pem", "KAFKA_SASL_MECHANISM": "PLAIN",
                    "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "hunter2",
                ], "KAFKA_SSL_CA_LOCATION is set but"
            ),
            (["KAFKA_SECURITY_PROTOCOL": "ssl", "KAFKA_SSL_CA_LOCATION": "/nonexistent/ca.pem"], "/nonexistent/ca.pem is not a readable file"),
        ]
        for (environment, expected) in cases {
            let message = Self.startupError { try Self.settings(environment).kafkaSecurity }
            #expect(message?.contains(expected) == true, "\(environment): \(message ?? "no error")")
            #expect(message?.contains("hunter2") != true, "the password is never in an error")
        }
        // PlatformSettings reads it once at start, so the platform refuses to start.
        #expect(Self.startupError { try PlatformSettings(Self.settings(["KAFKA_SECURITY_PROTOCOL": "tls"])) } != nil)
    }

    @Test("the inbox consumers' reader: native by default, librdkafka by KAFKA_INBOX_READER, anything else a startup error naming the setting")
    func inboxReader() throws {
        #expect(try PlatformSettings(Self.settings([:])).kafkaInboxReaderIsNative)
        #expect(try !PlatformSettings(Self.settings(["KAFKA_INBOX_READER": "librdkafka"])).kafkaInboxReaderIsNative)
        let refusal = Self.startupError { try PlatformSettings(Self.settings(["KAFKA_INBOX_READER": "rdkafka"])) }
        #expect(refusal?.contains("kafka.inbox-reader") == true, "\(refusal ?? "accepted")")
    }

    @Test("PostgreSQL sslmode from the URL or DATABASE_SSLMODE (the URL wins); disable by default")
    func postgresSSLMode() throws {
        let url = "postgres://u:p@db.example.com:5432/app"
        #expect(try #require(try Self.settings(["DATABASE_URL": url]).database()).sslMode == .disable)
        for mode in DatabaseConfiguration.SSLMode.allCases {
            #expect(try #require(try Self.settings(["DATABASE_URL": "\(url)?sslmode=\(mode.rawValue)"]).database()).sslMode == mode)
            #expect(try #require(try Self.settings(["DATABASE_URL": url, "DATABASE_SSLMODE": mode.rawValue]).database()).sslMode == mode)
        }
        let both = try #require(try Self.settings(["DATABASE_URL": "\(url)?sslmode=verify-full", "DATABASE_SSLMODE": "disable"]).database())
        #expect(both.sslMode == .verifyFull)
        // The URL handed to child processes keeps the mode; the log form never has the password.
        #expect(try DatabaseConfiguration(url: both.url).sslMode == .verifyFull)
        #expect(both.description == "postgres://u@db.example.com:5432/app")
    }

    @Test("an unknown sslmode (URL or setting), an unreadable root certificate, or one without verification are startup errors")
    func postgresInvalid() throws {
        let url = "postgres://u:hunter2@db:5432/app"
        let cases: [([String: String], String)] = [
            (["DATABASE_URL": "\(url)?sslmode=strict"], "sslmode 'strict' is not supported"),
            (["DATABASE_URL": "\(url)?sslmode=allow"], "sslmode 'allow' is not supported"),
            (["DATABASE_URL": url, "DATABASE_SSLMODE": "on"], "database.sslmode (DATABASE_SSLMODE): sslmode 'on' is not supported"),
            (["DATABASE_URL": "\(url)?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"], "/nonexistent/ca.pem"),
            (["DATABASE_URL": url, "DATABASE_SSLMODE": "verify-ca", "DATABASE_SSL_ROOT_CERT": "/nonexistent/ca.pem"], "/nonexistent/ca.pem"),
        ]
        for (environment, expected) in cases {
            let message = Self.startupError { try Self.settings(environment).database() }
            #expect(message?.contains(expected) == true, "\(environment): \(message ?? "no error")")
            #expect(message?.contains("hunter2") != true, "the password is never in an error")
        }
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("pg-ca-\(UUID().uuidString).pem")
        try "-----BEGIN CERTIFICATE-----\n".write(to: ca, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: ca) }
        let message = Self.startupError { try Self.settings(["DATABASE_URL": "\(url)?sslmode=require", "DATABASE_SSL_ROOT_CERT": ca.path]).database() }
        #expect(message?.contains("use verify-ca or verify-full") == true, "\(message ?? "no error")")
        let verified = try #require(try Self.settings(["DATABASE_URL": "\(url)?sslmode=verify-ca", "DATABASE_SSL_ROOT_CERT": ca.path]).database())
        #expect(verified.sslRootCertificate == ca.path)
    }
}
