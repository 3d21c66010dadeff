import Kafka
import ServiceKit
import Testing

@testable import ChatFanoutApp

@Suite("chat-fanout's own settings")
struct FanoutSettingsTests {
    private func settings(_ environment: [String: String]) -> ServiceSettings {
        ServiceSettings(
            serviceName: ChatFanoutService.name, defaults: ChatFanoutService.defaults, environment: environment, arguments: [ChatFanoutService.name])
    }

    @Test("the message consumer's batch wait: 2 ms unless set, 0 (off) to 1 000 ms, anything else refused at startup; the gateway's own key does not move it")
    func fetchBatch() throws {
        #expect(try FanoutSettings(settings([:])).fetchBatchMilliseconds == 2)
        #expect(try FanoutSettings(settings(["FANOUT_FETCH_BATCH_MS": "0"])).fetchBatchMilliseconds == 0)
        #expect(try FanoutSettings(settings(["FANOUT_FETCH_BATCH_MS": "1000"])).fetchBatchMilliseconds == 1_000)
        #expect(try FanoutSettings(settings(["KAFKA_DELIVERY_FETCH_BATCH_MS": "7"])).fetchBatchMilliseconds == 2)
        for bad in ["-1", "1001", "soon"] {
            #expect(throws: StartupError.self, "\(bad)") { try FanoutSettings(settings(["FANOUT_FETCH_BATCH_MS": bad])) }
        }
    }

    @Test(
        "the group consumer is configured with them: chat-fanout's batch wait and batch size, the platform's fetch wait and min bytes, not the gateway's batch wait"
    )
    func consumerConfiguration() throws {
        let defaults = settings([:])
        let byDefault = FanoutConsumer.configuration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9"), platform: try PlatformSettings(defaults), fanout: try FanoutSettings(defaults))
        #expect(byDefault.fetchBatchWaitMilliseconds == 2)
        #expect(byDefault.maxBatchSize == 500)
        let set = settings([
            "KAFKA_DELIVERY_FETCH_BATCH_MS": "7", "FANOUT_FETCH_BATCH_MS": "3", "FANOUT_BATCH_SIZE": "20", "KAFKA_DELIVERY_FETCH_WAIT_MS": "40",
            "KAFKA_DELIVERY_FETCH_MIN_BYTES": "512",
        ])
        let configured = FanoutConsumer.configuration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9"), platform: try PlatformSettings(set), fanout: try FanoutSettings(set))
        #expect(configured.fetchBatchWaitMilliseconds == 3)
        #expect(configured.maxBatchSize == 20)
        #expect(configured.fetchWaitMaxMilliseconds == 40)
        #expect(configured.properties["fetch.min.bytes"] == "512")
    }

    @Test("the poll's batch size: 500 unless set, at least 1")
    func batchSize() throws {
        #expect(try FanoutSettings(settings([:])).batchSize == 500)
        #expect(try FanoutSettings(settings(["FANOUT_BATCH_SIZE": "20"])).batchSize == 20)
        for bad in ["0", "-5", "many"] {
            #expect(throws: StartupError.self, "\(bad)") { try FanoutSettings(settings(["FANOUT_BATCH_SIZE": bad])) }
        }
    }
}
