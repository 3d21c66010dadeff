import Common
import Events
import Foundation
import Kafka
import Logging

/// What `chatsuite events export` was asked for.
public struct ExportRequest: Sendable {
    public var brokers: String
    public var topics: [String]
    /// Events whose CloudEvents `time` is at or after this…
    public var since: Date
    /// …and before this (nil: no upper bound; the export still stops at each partition's end as
    /// it was when the export started).
    public var until: Date?
    public var outDirectory: URL
    /// Keep the fields of `EventPersonalData` (by default they are written as `null`).
    public var includePersonalData: Bool
    public var timeout: Duration

    public init(
        brokers: String, topics: [String], since: Date, until: Date?, outDirectory: URL, includePersonalData: Bool = false,
        timeout: Duration = .seconds(120)
    ) {
        self.brokers = brokers
        self.topics = topics
        self.since = since
        self.until = until
        self.outDirectory = outDirectory
        self.includePersonalData = includePersonalData
        self.timeout = timeout
    }

    /// Refuses what cannot be exported before anything is read: no topics, an empty range, an
    /// output path that is a file.
    public func validate() throws {
        guard !topics.isEmpty, topics.allSatisfy({ !$0.isEmpty }) else { throw ExportError("--topics names no topic") }
        if let until, until <= since { throw ExportError("--until (\(until)) is not after --since (\(since))") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: outDirectory.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw ExportError("--out \(outDirectory.path) is a file, not a directory")
        }
    }
}

/// What an export wrote.
public struct ExportSummary: Sendable, Equatable {
    /// Topic → events written.
    public var events: [String: Int] = [:]
    /// Relative file path → lines.
    public var files: [String: Int] = [:]
    /// Records read but outside the time range.
    public var outOfRange = 0
    /// Tombstones and values that are not CloudEvents JSON with a `time` (not written).
    public var unreadable = 0
    /// Events with personal data nulled.
    public var redacted = 0
}

/// Reads topics from Kafka without a consumer group (nothing is committed, no service's group is
/// disturbed) and writes the events in a time range as NDJSON partitioned by topic and hour.
///
/// Where it starts: each partition's first offset whose record timestamp is at or after `since`
/// (ListOffsets by time; a record is stamped when the outbox relay publishes it, never before
/// its event's `time`, so no event of the range is before it), or its start when the broker
/// names no such offset. Where it stops: each partition's
/// high watermark when the export started. Events are kept by their CloudEvents `time`.
public enum EventExporter {
    public static func run(_ request: ExportRequest, logger: Logger) async throws -> ExportSummary {
        try request.validate()
        let client = KafkaClientConfiguration(bootstrapServers: request.brokers, clientId: "chatsuite-events-export")
        let counts: [String: Int]
        do {
            counts = try await KafkaAdmin.partitionCounts(client: client, timeout: .seconds(10), logger: logger)
        } catch {
            throw ExportError("cannot read the topics of \(request.brokers): \(error)")
        }
        let unknown = request.topics.filter { counts[$0] == nil }
        guard unknown.isEmpty else {
            throw ExportError("unknown topic \(unknown.joined(separator: ", ")); the broker has \(counts.keys.sorted().joined(separator: ", "))")
        }
        let partitions = request.topics.flatMap { topic in (0..<(counts[topic] ?? 0)).map { TopicPartition(topic: topic, partition: Int32($0)) } }
        try FileManager.default.createDirectory(at: request.outDirectory, withIntermediateDirectories: true)

        // A probe consumer (assigned nothing) answers the watermark and by-time queries.
        let probe = try KafkaConsumer(configuration: KafkaConsumerConfiguration(client: client, mode: .assignment([])), logger: logger)
        var ranges: [TopicPartition: (start: Int64, end: Int64)] = [:]
        do {
            let starts = try await probe.offsets(atOrAfter: Int64((request.since.timeIntervalSince1970 * 1000).rounded(.down)), partitions: partitions)
            for partition in partitions {
                let (low, high) = try await probe.watermarks(topic: partition.topic, partition: partition.partition)
                // No offset at or after `since`: either every record is older, or the broker
                // cannot look offsets up by time (librdkafka's mock cluster answers "none"). The
                // two cannot be told apart without reading, so the partition is read from its start
                // (the time filter keeps the result exact; only the reading costs more).
                let from = max((starts[partition] ?? nil) ?? low, low)
                if from < high { ranges[partition] = (from, high) }
            }
        } catch {
            await probe.close()
            throw ExportError("cannot read the offsets of \(request.topics.joined(separator: ", ")): \(error)")
        }
        await probe.close()

        let run = UUIDv7.generate().uuidString.lowercased()
        let writer = HourPartitionWriter(root: request.outDirectory, run: run)
        var summary = ExportSummary()
        for topic in request.topics { summary.events[topic] = 0 }
        if !ranges.isEmpty {
            var configuration = KafkaConsumerConfiguration(
                client: client,
                mode: .assignment(ranges.map { TopicPartitionOffset(topic: $0.key.topic, partition: $0.key.partition, offset: .exact($0.value.start)) })
            )
            configuration.reportEndOfPartition = true
            let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
            let ends = ranges.mapValues(\.end)
            let state = Locked((summary, ends))
            do {
                try await withTimeout(request.timeout, "reading \(request.topics.joined(separator: ", ")) up to the offsets at start") {
                    for try await event in consumer.events {
                        let done = try state.withLock { s -> Bool in
                            try Self.handle(event, request: request, writer: writer, summary: &s.0, remaining: &s.1)
                            return s.1.isEmpty
                        }
                        if done { break }
                    }
                }
            } catch {
                await consumer.close()
                try? writer.close()
                throw error
            }
            await consumer.close()
            summary = state.value.0
        }
        try writer.close()
        summary.files = writer.files
        return summary
    }

    private static func handle(
        _ event: KafkaConsumerEvent, request: ExportRequest, writer: HourPartitionWriter, summary: inout ExportSummary,
        remaining: inout [TopicPartition: Int64]
    ) throws {
        switch event {
        case .endOfPartition(let partition, let offset):
            if let end = remaining[partition], offset >= end { remaining[partition] = nil }
        case .message(let message):
            let partition = TopicPartition(topic: message.topic, partition: message.partition)
            guard let end = remaining[partition], message.offset < end else { return }
            if message.offset + 1 >= end { remaining[partition] = nil }
            guard let value = message.value, var object = (try? JSONSerialization.jsonObject(with: Data(value))) as? [String: Any],
                let timeText = object["time"] as? String, let time = Timestamp.parse(timeText)
            else {
                summary.unreadable += 1
                return
            }
            guard time >= request.since, request.until.map({ time < $0 }) ?? true else {
                summary.outOfRange += 1
                return
            }
            var line = Data(value)
            if !request.includePersonalData, PersonalDataRedaction.redact(&object) {
                summary.redacted += 1
                line = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            } else if line.contains(UInt8(ascii: "\n")) || line.contains(UInt8(ascii: "\r")) {
                line = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            }
            try writer.append(line: line, topic: message.topic, time: time)
            summary.events[message.topic, default: 0] += 1
        }
    }
}
