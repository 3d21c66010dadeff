import Logging
import Testing

@testable import Kafka

@Suite("Kafka TLS / SASL reach librdkafka")
struct KafkaSecurityTests {
    static let sasl = try? KafkaSecurity(
        protocol: "sasl_ssl", saslMechanism: "SCRAM-SHA-256", saslUsername: "svc", saslPassword: "pw", caLocation: nil)

    @Test("producer, consumer and admin properties carry the client's security settings")
    func propertiesCarrySecurity() throws {
        var client = KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1", clientId: "t")
        client.security = try #require(Self.sasl)
        let expected = ["security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "svc", "sasl.password": "pw"]
        let producer = KafkaProducerConfiguration(client: client).librdkafkaProperties
        let consumer = KafkaConsumerConfiguration(client: client, mode: .group(id: "g", topics: ["t"])).librdkafkaProperties
        for properties in [client.baseProperties, producer, consumer] {
            #expect(expected.allSatisfy { properties[$0.key] == $0.value }, "\(properties.filter { $0.key.hasPrefix("s") })")
        }
        #expect(KafkaClientConfiguration(bootstrapServers: "x").baseProperties["security.protocol"] == "plaintext")
    }

    @Test("librdkafka accepts the properties (it is built with TLS and SASL) and creates the client")
    func librdkafkaAccepts() throws {
        var client = KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1", clientId: "t")
        client.security = try #require(Self.sasl)
        // Creating the handle validates every property; no broker is needed for that.
        _ = try KafkaProducer(configuration: KafkaProducerConfiguration(client: client), logger: Logger(label: "test"))
    }
}
