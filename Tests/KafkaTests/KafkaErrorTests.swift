import Kafka
import Testing

@Suite("Kafka delivery errors: permanent for the record or not")
struct KafkaErrorTests {
    @Test("size, invalid record and invalid topic refusals are permanent; outages, timeouts, authorisation and fatal errors are not")
    func classification() {
        // librdkafka's codes: broker errors are positive, client-side ones negative.
        // INVALID_MSG, INVALID_MSG_SIZE, MSG_SIZE_TOO_LARGE, TOPIC_EXCEPTION, RECORD_LIST_TOO_LARGE, INVALID_RECORD
        let permanent: [Int32] = [2, 4, 10, 17, 18, 87]
        // transport, timeouts, brokers down, queue full, unknown topic, leader, replicas, authorisation
        let transient: [Int32] = [-195, -192, -187, -185, -184, -188, 3, 6, 7, 19, 29, 31]
        for code in permanent {
            #expect(KafkaError(code: code, message: "x").isPermanentForRecord, "code \(code)")
        }
        for code in transient {
            #expect(!KafkaError(code: code, message: "x").isPermanentForRecord, "code \(code)")
        }
        #expect(!KafkaError(code: 10, message: "fatal", isFatal: true).isPermanentForRecord, "a fatal client error is the client's, not the record's")
    }
}
