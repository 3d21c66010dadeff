import Configuration
import Database
import Hummingbird
import Kafka
import Logging
import ServiceCatalog
import ServiceKit

/// `chat-fanout`: Turns `chat.message.v1` into one delivery per interested gateway on `gateway.delivery.v1`.
///
/// Every replica reads `gateway.interest.v1` whole (its own interest table) and joins the one
/// `chat-fanout` consumer group over `chat.message.v1` once that table is caught up, so any number
/// of replicas share the messages and each message reaches each interested gateway.
public enum ChatFanoutService {
    public static let name = ServiceEntry.chatFanout.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.chatFanout.port), isSecret: false), "fanout.batch-size": 500,
        "fanout.fetch-batch-ms": 2,
    ]
}

/// Builds the `chat-fanout` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let fanoutSettings = try FanoutSettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, logger: logger)
    let fetchWait = platform.platformSettings.kafkaFetchWaitMilliseconds

    let table = InterestTable()
    let interest = try InterestReader(client: platform.kafkaClient, fetchWaitMilliseconds: fetchWait, table: table, logger: logger)
    // The interest table loads from the start; the group consumer joins once the service is
    // ready and the table caught up. Shutdown runs in reverse: fan-out stops before the table.
    platform.addService(interest)
    let consumerConfiguration = FanoutConsumer.configuration(client: platform.kafkaClient, platform: platform.platformSettings, fanout: fanoutSettings)
    consumerConfiguration.announceForReadiness()  // created once the interest table is loaded
    // Deliveries on a producer of their own, which the consumer's poll thread blocks on until
    // every record of a poll is acknowledged. On a plaintext cluster the suite's own writer
    // (`KafkaRecordWriter`: the poll thread itself sends and awaits the Produce requests, no
    // librdkafka broker thread, docs/benchmarks.md, part 18) unless `kafka.delivery-writer` is
    // `librdkafka`; else an idempotent librdkafka producer whose acknowledgements the poll thread
    // serves itself. Uncompressed either way (whatever `kafka.compression` says): a gateway reads
    // them within milliseconds, and compressing costs more than it saves there (DeliveryConsumer). Either stops after the consumer.
    var deliveryProducer = platform.producer.configuration
    deliveryProducer.compression = "none"
    let sender: any KafkaBlockingSender
    if platform.platformSettings.kafkaDeliveryWriterIsNative, KafkaRecordWriter.canWrite(deliveryProducer) {
        let writer = try KafkaRecordWriter(configuration: deliveryProducer, logger: logger)
        platform.addService(writer)
        sender = writer
    } else {
        let producer = try KafkaBlockingProducer(configuration: deliveryProducer, logger: logger)
        platform.addService(producer)
        sender = producer
    }
    let fetchesItself = platform.platformSettings.kafkaFanoutReaderIsNative
    platform.addGatedService {
        FanoutConsumer(
            configuration: consumerConfiguration, producer: sender, table: table, logger: logger,
            fetchesItself: fetchesItself
        ) { interest.isCaughtUp }
    }
    platform.addReadinessCheck("gateway-interest") {
        guard interest.isCaughtUp else { throw InterestNotLoaded() }
    }
    let router = platform.makeRouter()
    return platform.makeApplication(responder: router.buildResponder())
}

/// Readiness: the interest table has not yet read `gateway.interest.v1` up to its end.
struct InterestNotLoaded: Error, CustomStringConvertible {
    var description: String { "gateway interest not caught up yet" }
}
