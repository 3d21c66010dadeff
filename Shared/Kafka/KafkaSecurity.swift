import Foundation

/// How clients reach the brokers: plaintext (the compose broker, the embedded one) or TLS and/or
/// SASL (managed Kafka). Maps to librdkafka's `security.protocol`, `sasl.mechanisms`,
/// `sasl.username`, `sasl.password` and `ssl.ca.location`.
public struct KafkaSecurity: Sendable, Equatable, CustomStringConvertible {
    public enum SecurityProtocol: String, Sendable, CaseIterable {
        case plaintext
        case ssl
        case saslPlaintext = "sasl_plaintext"
        case saslSSL = "sasl_ssl"

        public var usesSASL: Bool { self == .saslPlaintext || self == .saslSSL }
        public var usesTLS: Bool { self == .ssl || self == .saslSSL }
    }

    /// The SASL mechanisms librdkafka supports with a user name and password.
    public enum SASLMechanism: String, Sendable, CaseIterable {
        case plain = "PLAIN"
        case scramSHA256 = "SCRAM-SHA-256"
        case scramSHA512 = "SCRAM-SHA-512"
    }

    public struct SASL: Sendable, Equatable {
        public var mechanism: SASLMechanism
        public var username: String
        /// Secret: never in `description`.
        public var password: String

        public init(mechanism: SASLMechanism, username: String, password: String) {
            self.mechanism = mechanism
            self.username = username
            self.password = password
        }
    }

    /// Why a combination of settings cannot work; the text names the settings by their
    /// environment variables (the form operators set them in).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public var securityProtocol: SecurityProtocol
    /// Set exactly when the protocol is `sasl_*`.
    public var sasl: SASL?
    /// A PEM bundle of CAs to verify the brokers with (nil: the system's); TLS protocols only.
    public var caLocation: String?

    public static let plaintext = KafkaSecurity(unchecked: .plaintext, sasl: nil, caLocation: nil)

    private init(unchecked securityProtocol: SecurityProtocol, sasl: SASL?, caLocation: String?) {
        self.securityProtocol = securityProtocol
        self.sasl = sasl
        self.caLocation = caLocation
    }

    /// Parses the settings as given (empty = unset). The protocol is case-insensitive and
    /// defaults to plaintext; SASL needs a mechanism, a user name and a password, and SASL or CA
    /// settings with a protocol that does not use them are refused rather than ignored.
    public init(protocol protocolText: String?, saslMechanism: String?, saslUsername: String?, saslPassword: String?, caLocation: String?) throws(Invalid) {
        func given(_ text: String?) -> String? {
            guard let trimmed = text?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty else { return nil }
            return trimmed
        }
        let protocolName = given(protocolText)?.lowercased() ?? SecurityProtocol.plaintext.rawValue
        guard let securityProtocol = SecurityProtocol(rawValue: protocolName) else {
            throw Invalid(
                "KAFKA_SECURITY_PROTOCOL '\(protocolName)' is not supported: use \(SecurityProtocol.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let mechanismName = given(saslMechanism)?.uppercased()
        let username = given(saslUsername)
        // A password is taken as given (spaces may be part of it); only empty means unset.
        let password = saslPassword.flatMap { $0.isEmpty ? nil : $0 }
        var sasl: SASL?
        if securityProtocol.usesSASL {
            guard let mechanismName else {
                throw Invalid(
                    "KAFKA_SECURITY_PROTOCOL \(protocolName) needs KAFKA_SASL_MECHANISM (\(SASLMechanism.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard let mechanism = SASLMechanism(rawValue: mechanismName) else {
                throw Invalid(
                    "KAFKA_SASL_MECHANISM '\(mechanismName)' is not supported: use \(SASLMechanism.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let username, let password else {
                throw Invalid("KAFKA_SECURITY_PROTOCOL \(protocolName) needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (or KAFKA_SASL_PASSWORD_FILE)")
            }
            sasl = SASL(mechanism: mechanism, username: username, password: password)
        } else if mechanismName != nil || username != nil || password != nil {
            throw Invalid("KAFKA_SASL_* is set but KAFKA_SECURITY_PROTOCOL is \(protocolName): use sasl_ssl or sasl_plaintext, or unset them")
        }
        let ca = given(caLocation)
        if ca != nil && !securityProtocol.usesTLS {
            throw Invalid("KAFKA_SSL_CA_LOCATION is set but KAFKA_SECURITY_PROTOCOL is \(protocolName): use ssl or sasl_ssl, or unset it")
        }
        self.init(unchecked: securityProtocol, sasl: sasl, caLocation: ca)
    }

    /// The librdkafka properties (none beyond `security.protocol` for plaintext).
    public var properties: [String: String] {
        var p = ["security.protocol": securityProtocol.rawValue]
        if let sasl {
            p["sasl.mechanisms"] = sasl.mechanism.rawValue
            p["sasl.username"] = sasl.username
            p["sasl.password"] = sasl.password
        }
        if let caLocation { p["ssl.ca.location"] = caLocation }
        return p
    }

    /// Log-safe: the protocol, mechanism, user and CA file, never the password.
    public var description: String {
        var text = securityProtocol.rawValue
        if let sasl { text += " (\(sasl.mechanism.rawValue) as \(sasl.username))" }
        if let caLocation { text += " CA \(caLocation)" }
        return text
    }
}
