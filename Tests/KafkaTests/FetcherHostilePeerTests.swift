import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing
import TestSupport

@testable import Kafka

/// `BlockingPartitionFetcher` (chat-fanout's own fetch) against a scripted broker that misbehaves
/// on purpose: answers that are garbage, lie, name partitions not asked for, say the offset is out
/// of range, or never come. Each time the fetcher backs off, reconnects and goes on from the right
/// offset; nothing crashes, nothing is read twice or skipped, and a silent peer never holds it past
/// its limit or its stop.
@Suite("The own fetch against a misbehaving broker")
struct FetcherHostilePeerTests {
    private func fetcher(
        port: Int, maxWait: Int32 = 50, batchWait: Int32 = 0, giveUp: @escaping @Sendable () -> Bool = { false }
    ) -> BlockingPartitionFetcher {
        BlockingPartitionFetcher(
            settings: .init(
                clientId: "hostile-test", bootstrap: [KafkaBrokerAddress(host: "127.0.0.1", port: port)], maxWaitMilliseconds: maxWait, minBytes: 1,
                batchWaitMilliseconds: batchWait, resetToEarliest: true),
            logger: TestKafka.logger, giveUp: giveUp)
    }

    /// Steps (honouring back-offs) until `count` records came or `timeout` passed.
    private func fetch(_ fetcher: BlockingPartitionFetcher, count: Int, timeout: Duration = .seconds(10)) -> [KafkaConsumerMessage] {
        var records: [KafkaConsumerMessage] = []
        let deadline = ContinuousClock.now + timeout
        while records.count < count, ContinuousClock.now < deadline {
            if fetcher.idleUntil != nil {
                Thread.sleep(forTimeInterval: 0.01)  // a back-off
                continue
            }
            records += fetcher.step(until: .now + .milliseconds(200)).records
        }
        return records
    }

    private static let partition = TopicPartition(topic: "t", partition: 0)

    private func start(_ script: ScriptedBroker) async throws -> (any Channel, Int) {
        let (server, port) = try await startPeer { pipeline in
            try pipeline.addHandler(ByteToMessageHandler(KafkaFrameDecoder(minimumSize: 4)))
            try pipeline.addHandler(ScriptedBrokerHandler(script: script))
        }
        script.port.store(port, ordering: .relaxed)
        return (server, port)
    }

    @Test(
        "a first fetch answered badly: backed off, reconnected, then every record once and in order from the offset asked for",
        arguments: ScriptedBroker.Misbehaviour.allCases)
    func recovers(_ misbehaviour: ScriptedBroker.Misbehaviour) async throws {
        let script = ScriptedBroker(log: 0..<20, misbehave: [misbehaviour])
        let (server, port) = try await start(script)
        defer { server.close(promise: nil) }
        let fetcher = fetcher(port: port)
        fetcher.assign(keeping: [], starting: [Self.partition: 3])
        let records = fetch(fetcher, count: 17)
        #expect(records.map(\.offset) == Array(3..<20), "\(misbehaviour)")
        #expect(script.fetches.load(ordering: .relaxed) >= 2, "the bad answer was followed by a good one")
        #expect(fetcher.positions[Self.partition] == 20)
        if misbehaviour.closesConnection {
            #expect(script.connections.load(ordering: .relaxed) >= 3, "the connection that carried it was dropped (bootstrap, the bad one, a new one)")
        }
    }

    @Test("an offset out of range: before the log's start it moves to the start, past its end to the end (as auto.offset.reset would)")
    func outOfRange() async throws {
        let script = ScriptedBroker(log: 5..<12, misbehave: [])
        let (server, port) = try await start(script)
        defer { server.close(promise: nil) }
        let behind = fetcher(port: port)
        behind.assign(keeping: [], starting: [Self.partition: 2])
        #expect(fetch(behind, count: 7).map(\.offset) == Array(5..<12))

        let ahead = fetcher(port: port)
        ahead.assign(keeping: [], starting: [Self.partition: 1_000])
        let deadline = ContinuousClock.now + .seconds(10)
        while ahead.positions[Self.partition] != 12, ContinuousClock.now < deadline { _ = fetch(ahead, count: 1, timeout: .milliseconds(300)) }
        #expect(ahead.positions[Self.partition] == 12, "reset to the end")
        script.append(12..<15)
        #expect(fetch(ahead, count: 3).map(\.offset) == [12, 13, 14], "and reads what comes after")
    }

    @Test("a broker that never answers a fetch: each step ends at its limit; a stop ends a silent metadata wait within 100 ms")
    func silent() async throws {
        let script = ScriptedBroker(log: 0..<5, misbehave: [.silent])
        let (server, port) = try await start(script)
        defer { server.close(promise: nil) }
        let quiet = fetcher(port: port)
        quiet.assign(keeping: [], starting: [Self.partition: 0])
        for _ in 0..<3 {
            let started = ContinuousClock.now
            let step = quiet.step(until: .now + .milliseconds(300))
            #expect(step.records.isEmpty)
            #expect(ContinuousClock.now - started < .seconds(2), "the step ended at its limit")
        }

        let mute = ScriptedBroker(log: 0..<5, misbehave: [], muteMetadata: true)
        let (muteServer, mutePort) = try await start(mute)
        defer { muteServer.close(promise: nil) }
        let stopping = Atomic<Bool>(false)
        let stoppedAt = Mutex<ContinuousClock.Instant?>(nil)
        let stopped = fetcher(port: mutePort) { stopping.load(ordering: .relaxed) }
        stopped.assign(keeping: [], starting: [Self.partition: 0])
        // The stop comes from a thread of its own, and is timed from when it was made: on a
        // loaded machine a task's 300 ms sleep on the cooperative pool can end seconds late
        // (CI: 2.03 s from the step's start), which says nothing about the fetcher.
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            stoppedAt.withLock { $0 = .now }
            stopping.store(true, ordering: .relaxed)
        }
        let step = stopped.step(until: .now + .seconds(30))
        let ended = ContinuousClock.now
        #expect(step.records.isEmpty)
        let afterStop = try #require(stoppedAt.withLock { $0 }.map { ended - $0 }, "the step ended only once stopped")
        #expect(afterStop < .seconds(2), "ended soon after the stop, not at the 5 s metadata wait (\(afterStop))")
        #expect(stopped.idleUntil != nil, "and backs off")
    }

    @Test(
        "fetches that batch under load (kafka.delivery-fetch-batch-ms) start over unbatched on a new assignment: the load seen was another set's"
    )
    func newAssignmentUnbatched() async throws {
        let script = ScriptedBroker(log: 0..<5, misbehave: [])
        let (server, port) = try await start(script)
        defer { server.close(promise: nil) }
        // A batch wait longer than any answer takes here, so the answers with records count as
        // under load however slow the machine; the scripted broker answers at once either way.
        let fetcher = fetcher(port: port, maxWait: 500, batchWait: 5_000)
        fetcher.assign(keeping: [], starting: [Self.partition: 0])
        #expect(fetch(fetcher, count: 5).map(\.offset) == Array(0..<5))
        script.append(5..<8)
        #expect(fetch(fetcher, count: 3).map(\.offset) == [5, 6, 7])
        #expect(
            script.fetchWaits == [0, 5_000],
            "the first fetch answered at once (the partition's end not known yet), the one after an answer with records batching")

        fetcher.assign(keeping: [Self.partition], starting: [:])  // a rebalance that keeps the partition
        script.append(8..<10)
        #expect(fetch(fetcher, count: 2).map(\.offset) == [8, 9], "kept its position")
        #expect(script.fetchWaits.dropFirst(2).first == 500, "the first fetch after the new assignment is unbatched: \(script.fetchWaits)")
    }
}

/// What a `ScriptedBrokerHandler` serves: one topic "t" with one partition whose log holds one
/// record per offset in `log` (each its own batch), and, for the first fetches, the
/// misbehaviours in `misbehave`, one per fetch.
final class ScriptedBroker: Sendable {
    enum Misbehaviour: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// A frame claiming 2 GiB.
        case hugeFrame
        /// An answer with a correlation id nobody asked for.
        case wrongCorrelation
        /// A well-framed answer whose fields end early.
        case truncated
        /// A record batch whose record offsets lie (beyond the batch's last).
        case lyingBatch
        /// A batch with a base offset at the top of Int64.
        case topOffset
        /// An answer for partition 9 only.
        case foreignPartition
        /// NOT_LEADER_FOR_PARTITION.
        case notLeader
        /// The connection closed instead of an answer.
        case close
        /// No answer at all (only for `silent`).
        case silent

        static let allCases: [Misbehaviour] = [.hugeFrame, .wrongCorrelation, .truncated, .lyingBatch, .topOffset, .foreignPartition, .notLeader, .close]

        var closesConnection: Bool { [.hugeFrame, .wrongCorrelation, .truncated, .lyingBatch, .topOffset, .close].contains(self) }
        var testDescription: String { rawValue }
    }

    let port = Atomic<Int>(0)
    let fetches = Atomic<Int>(0)
    /// Each fetch's max wait, in the order they came.
    private let waits = Mutex<[Int32]>([])
    let connections = Atomic<Int>(0)
    let muteMetadata: Bool
    private let state: Mutex<(log: Range<Int64>, misbehave: [Misbehaviour])>

    init(log: Range<Int64>, misbehave: [Misbehaviour], muteMetadata: Bool = false) {
        state = Mutex((log, misbehave))
        self.muteMetadata = muteMetadata
    }

    func append(_ more: Range<Int64>) { state.withLock { $0.log = $0.log.lowerBound..<more.upperBound } }

    /// The log now, and the misbehaviour for this fetch (nil: answer properly). `silent` stays.
    func nextFetch() -> (Range<Int64>, Misbehaviour?) {
        fetches.add(1, ordering: .relaxed)
        return state.withLock { state in
            guard let first = state.misbehave.first else { return (state.log, nil) }
            if first != .silent { state.misbehave.removeFirst() }
            return (state.log, first)
        }
    }

    var log: Range<Int64> { state.withLock { $0.log } }

    var fetchWaits: [Int32] { waits.withLock { $0 } }

    func recordWait(_ wait: Int32) { waits.withLock { $0.append(wait) } }
}

final class ScriptedBrokerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let script: ScriptedBroker

    init(script: ScriptedBroker) { self.script = script }

    func channelActive(context: ChannelHandlerContext) {
        script.connections.add(1, ordering: .relaxed)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var request = unwrapInboundIn(data)
        guard let api = request.readInteger(as: Int16.self), request.readInteger(as: Int16.self) != nil,
            let correlationId = request.readInteger(as: Int32.self), let clientIdLength = request.readInteger(as: Int16.self)
        else { return }
        request.moveReaderIndex(forwardBy: max(0, Int(clientIdLength)))
        var answer = ByteBuffer()
        answer.writeInteger(Int32(0))
        answer.writeInteger(correlationId)
        switch api {
        case 3:
            if script.muteMetadata { return }
            answer.writeSingleBrokerMetadata(port: script.port.load(ordering: .relaxed))
        case 2:
            var reader = KafkaReader(request)
            guard let timestamp = try? Self.firstPartitionValue(&reader, skipping: 4) else { return }  // after the replica id
            let log = script.log
            answer.writeKafkaArray(["t"]) { out, topic in
                out.writeKafkaString(topic)
                out.writeKafkaArray([Int32(0)]) { out, partition in
                    out.writeKafka(partition)
                    out.writeKafka(Int16(0))
                    out.writeKafka(Int64(-1))
                    out.writeKafka(timestamp == KafkaClientMessages.earliest ? log.lowerBound : log.upperBound)
                }
            }
        case 1:
            var reader = KafkaReader(request)
            if let wait = request.getInteger(at: request.readerIndex + KafkaClientMessages.fetchMaxWaitAt, as: Int32.self) { script.recordWait(wait) }
            guard let offset = try? Self.firstPartitionValue(&reader, skipping: 17) else { return }  // after replica, wait, sizes, isolation
            let (log, misbehaviour) = script.nextFetch()
            switch misbehaviour {
            case .silent: return
            case .close:
                context.close(promise: nil)
                return
            case .hugeFrame:
                var out = ByteBuffer()
                out.writeInteger(Int32.max)
                context.writeAndFlush(wrapOutboundOut(out), promise: nil)
                return
            case .wrongCorrelation:
                answer.setInteger(correlationId &+ 77, at: 4)
                fetchAnswer(offset: offset, log: log, into: &answer)
            case .truncated:
                answer.writeKafka(Int32(0))
                answer.writeKafka(Int32(1))
                answer.writeKafkaString("t")
                answer.writeKafka(Int32(5))  // five partitions announced, none there
            case .lyingBatch, .topOffset:
                typealias Record = HostileRecordBatchTests.Record
                let batch =
                    misbehaviour == .topOffset
                    ? HostileRecordBatchTests.batch(baseOffset: .max - 1, [Record(offsetDelta: 0), Record(offsetDelta: 1)])
                    : HostileRecordBatchTests.batch(baseOffset: offset, [Record(offsetDelta: 0), Record(offsetDelta: 5)])  // 5: past its last (1)
                partitionAnswer(partition: 0, error: 0, highWatermark: log.upperBound, records: batch, into: &answer)
            case .foreignPartition:
                partitionAnswer(partition: 9, error: 0, highWatermark: log.upperBound, records: Self.records(from: offset, log), into: &answer)
            case .notLeader:
                partitionAnswer(partition: 0, error: 6, highWatermark: -1, records: [], into: &answer)
            case nil:
                fetchAnswer(offset: offset, log: log, into: &answer)
            }
        default:
            return
        }
        answer.setInteger(Int32(answer.readableBytes - 4), at: 0)
        context.writeAndFlush(wrapOutboundOut(answer), promise: nil)
    }

    private func fetchAnswer(offset: Int64, log: Range<Int64>, into answer: inout ByteBuffer) {
        guard offset >= log.lowerBound, offset <= log.upperBound else {
            return partitionAnswer(partition: 0, error: 1, highWatermark: log.upperBound, records: [], into: &answer)  // OFFSET_OUT_OF_RANGE
        }
        partitionAnswer(partition: 0, error: 0, highWatermark: log.upperBound, records: Self.records(from: offset, log), into: &answer)
    }

    /// One batch per offset from `offset` to the log's end, each with its own base offset.
    private static func records(from offset: Int64, _ log: Range<Int64>) -> [UInt8] {
        var bytes: [UInt8] = []
        for at in max(offset, log.lowerBound)..<log.upperBound {
            var batch = recordBatch(timestamps: [1_000 + at])
            batch.replaceSubrange(0..<8, with: withUnsafeBytes(of: at.bigEndian, Array.init))
            bytes += batch
        }
        return bytes
    }

    private func partitionAnswer(partition: Int32, error: Int16, highWatermark: Int64, records: [UInt8], into answer: inout ByteBuffer) {
        answer.writeKafka(Int32(0))  // throttle
        answer.writeKafkaArray(["t"]) { out, topic in
            out.writeKafkaString(topic)
            out.writeKafkaArray([partition]) { out, partition in
                out.writeKafka(partition)
                out.writeKafka(error)
                out.writeKafka(highWatermark)
                out.writeKafka(highWatermark)  // last stable offset
                out.writeKafka(Int32(0))  // no aborted transactions
                out.writeKafka(Int32(records.count))
                out.writeBytes(records)
            }
        }
    }

    /// The first partition's first 64-bit field of a request naming one topic (a ListOffsets v1
    /// timestamp, a Fetch v4 offset), after `skipping` bytes of fields before the topics.
    private static func firstPartitionValue(_ reader: inout KafkaReader, skipping: Int) throws -> Int64 {
        for _ in 0..<skipping { _ = try reader.int8() }
        _ = try reader.int32()  // topics
        _ = try reader.string()
        _ = try reader.int32()  // partitions
        _ = try reader.int32()  // the partition
        return try reader.int64()
    }
}

extension ByteBuffer {
    /// A Metadata v1 answer body of a fake broker: itself (node 1 on 127.0.0.1:`port`), leading
    /// the one partition of topic "t".
    mutating func writeSingleBrokerMetadata(port: Int) {
        writeKafkaArray([1]) { out, node in
            out.writeKafka(Int32(node))
            out.writeKafkaString("127.0.0.1")
            out.writeKafka(Int32(port))
            out.writeKafkaString(nil)
        }
        writeKafka(Int32(1))  // controller
        writeKafkaArray(["t"]) { out, topic in
            out.writeKafka(Int16(0))
            out.writeKafkaString(topic)
            out.writeKafka(Int8(0))
            out.writeKafkaArray([Int32(0)]) { out, partition in
                out.writeKafka(Int16(0))
                out.writeKafka(partition)
                out.writeKafka(Int32(1))  // leader
                out.writeKafkaArray([Int32(1)]) { $0.writeKafka($1) }
                out.writeKafkaArray([Int32(1)]) { $0.writeKafka($1) }
            }
        }
    }
}
