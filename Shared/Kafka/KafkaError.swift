import CRdKafka

/// An error from librdkafka or from the Swift layer around it.
public struct KafkaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// librdkafka's `rd_kafka_resp_err_t` value (negative = client-side, positive = broker).
    public let code: Int32
    public let message: String
    /// Retrying the operation may succeed (broker down, timeout, queue full…).
    public let isRetriable: Bool
    /// The client instance is unusable and must be recreated (e.g. idempotence violated).
    public let isFatal: Bool

    public init(code: Int32, message: String, isRetriable: Bool = false, isFatal: Bool = false) {
        self.code = code
        self.message = message
        self.isRetriable = isRetriable
        self.isFatal = isFatal
    }

    init(_ err: rd_kafka_resp_err_t, _ context: String? = nil) {
        let text = String(cString: rd_kafka_err2str(err))
        self.code = err.rawValue
        self.message = context.map { "\($0): \(text)" } ?? text
        self.isRetriable = Self.retriableCodes.contains(err)
        self.isFatal = err == RD_KAFKA_RESP_ERR__FATAL
    }

    init(error: OpaquePointer) {
        let err = rd_kafka_error_code(error)
        self.code = err.rawValue
        self.message = String(cString: rd_kafka_error_string(error))
        self.isRetriable = rd_kafka_error_is_retriable(error) != 0 || Self.retriableCodes.contains(err)
        self.isFatal = rd_kafka_error_is_fatal(error) != 0
        rd_kafka_error_destroy(error)
    }

    public var description: String { message }

    /// The record itself can never be accepted, so retrying it is pointless: it is too large (for
    /// the broker, or for the producer's own `message.max.bytes`, which `produce()` reports as
    /// `MSG_SIZE_TOO_LARGE` before sending), malformed, or addressed to an invalid topic name.
    /// Outages, timeouts, authorisation and configuration errors are not: fixing the cluster
    /// makes the same record deliverable. A fatal client error is never a record's fault.
    public var isPermanentForRecord: Bool {
        !isFatal && Self.permanentRecordCodes.contains(code)
    }

    public static func configuration(_ message: String) -> KafkaError {
        KafkaError(code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, message: message)
    }

    public static func timedOut(_ message: String) -> KafkaError {
        KafkaError(code: RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, message: message, isRetriable: true)
    }

    public static let closed = KafkaError(code: RD_KAFKA_RESP_ERR__DESTROY.rawValue, message: "Kafka client is closed")

    /// Broker (and producer-side) refusals of a record that no retry can change.
    static let permanentRecordCodes = Set(
        [
            RD_KAFKA_RESP_ERR_INVALID_MSG,  // CORRUPT_MESSAGE: the record failed its CRC or is otherwise corrupt
            RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE,
            RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,  // broker's message.max.bytes, or the producer's (local)
            RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,  // invalid topic name
            RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE,
            RD_KAFKA_RESP_ERR_INVALID_RECORD,
        ].map(\.rawValue))

    static let retriableCodes: Set<rd_kafka_resp_err_t> = [
        RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__RESOLVE,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
    ]
}
