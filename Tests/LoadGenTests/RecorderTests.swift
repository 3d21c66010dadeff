import Common
import Testing
@testable import LoadGen

@Suite("Load generator recorders: what the sockets saw, what was sent")
struct RecorderTests {
    @Test func deliveriesAndProbesAreRecorded() {
        let log = DeliveryLog(expected: 4)
        log.delivered(socket: 3, message: 7, at: 100)
        log.delivered(socket: 4, message: 7, at: 120)
        #expect(log.deliveryCount == 2)
        #expect(log.allDeliveries.map(\.socket) == [3, 4])
        #expect(log.allDeliveries.map(\.nanos) == [100, 120])
        log.probed(socket: 2, channel: 9)
        #expect(log.hasProbe(socket: 2, channel: 9))
        #expect(!log.hasProbe(socket: 9, channel: 2))
        #expect(!log.hasProbe(socket: 2, channel: 8))
    }

    @Test func socketEventsSeparateFailuresFromDropsAndIgnoreClosesWhileStopping() {
        let log = DeliveryLog(expected: 0)
        log.ready(socket: 0)
        log.ready(socket: 1)
        log.failed("socketio: refused", socket: 2, afterReady: false)
        log.failed("native: closed by the server", socket: 1, afterReady: true)
        log.other()
        log.sequenceGap()
        var events = log.socketEvents
        #expect(events.ready == 2)
        #expect(events.readySockets == [0])
        #expect(events.failed == 1)
        #expect(events.droppedAfterReady == 1)
        #expect(events.errors == ["socketio: refused": 1, "native: closed by the server": 1])
        #expect(events.otherMessages == 1)
        #expect(events.sequenceGaps == 1)

        log.stopping.open()
        log.failed("native: cancelled", socket: 0, afterReady: true)
        log.failed("native: late handshake", socket: 5, afterReady: false)
        events = log.socketEvents
        #expect(events.readySockets == [0])
        #expect(events.droppedAfterReady == 1)
        #expect(events.failed == 2)
    }

    @Test func sendLogTracksIssueTimesLatenessAndOutcomes() {
        let log = SendLog(messages: 3)
        log.issued(1, at: 500, lagMs: 1, late: false)
        log.issued(0, at: 400, lagMs: 7.5, late: true)
        log.finished(0, failure: nil, at: 900)
        log.finished(1, failure: "HTTP 503", at: 950)
        let state = log.snapshot
        #expect(state.issued == [400, 500, 0])
        #expect(state.accepted == [true, false, false])
        #expect(state.acknowledged == [900, 0, 0])
        #expect(state.firstIssue == 400)
        #expect(state.lastIssue == 500)
        #expect(state.late == 1)
        #expect(state.maxLagMs == 7.5)
        #expect(state.failures == ["HTTP 503": 1])
    }
}

@Suite("Recognising the load generator's messages in received frames")
struct MarkerTests {
    func record(_ frame: String, markers: DeliveryMarkers, log: DeliveryLog) -> Bool {
        Array(frame.utf8).withUnsafeBytes { markers.record($0, socket: 5, at: 42, in: log) }
    }

    @Test func measuredMessagesAndProbesAreRecognisedWithoutDecoding() {
        let markers = DeliveryMarkers(runId: "ab12")
        let log = DeliveryLog(expected: 1)
        let content = DeliveryMarkers.content(runId: "ab12", message: 1234)
        #expect(content == "lg ab12-1234")
        #expect(record(#"42/ws-channel-x,["channel",{"chat_id":"c","content":"\#(content)","files":[]}]"#, markers: markers, log: log))
        #expect(log.allDeliveries.map(\.message) == [1234])
        #expect(log.allDeliveries.map(\.socket) == [5])

        let probe = DeliveryMarkers.content(runId: "ab12", probeOf: 17)
        #expect(probe == "lgprobe ab12-17")
        #expect(record(#"{"op":"dispatch","t":"channel.message","d":{"content":"\#(probe)"}}"#, markers: markers, log: log))
        #expect(log.hasProbe(socket: 5, channel: 17))
    }

    @Test func stompBodiesCarryTheTextInMessage() {
        let markers = DeliveryMarkers(runId: "ab12")
        let log = DeliveryLog(expected: 1)
        let frame = "MESSAGE\ndestination:/topic/group/c\nsubscription:s-0\n\n{\"type\":\"message\",\"message\":\"lg ab12-77\"}\0"
        #expect(Array(frame.utf8).withUnsafeBytes { markers.record($0, socket: 5, at: 42, in: log, stomp: true) })
        #expect(log.allDeliveries.map(\.message) == [77])
        // A Socket.IO or native frame is not read as STOMP's, nor the other way round.
        #expect(!Array(frame.utf8).withUnsafeBytes { markers.record($0, socket: 5, at: 42, in: log) })
        #expect(log.deliveryCount == 1)
    }

    @Test func otherRunsAndOtherFramesAreNotOurs() {
        let markers = DeliveryMarkers(runId: "ab12")
        let log = DeliveryLog(expected: 1)
        #expect(!record(#"{"content":"lg cd34-1"}"#, markers: markers, log: log))
        #expect(!record(#"{"content":"lg ab12-"}"#, markers: markers, log: log))  // no number
        #expect(!record("3", markers: markers, log: log))
        #expect(!record("", markers: markers, log: log))
        #expect(log.deliveryCount == 0)
    }

    @Test func byteSearch() {
        let hay = Array("xx\"s\":123,\"s\":9".utf8)
        hay.withUnsafeBytes { bytes in
            #expect(Bytes.end(of: Array("\"s\":".utf8), in: bytes) == 6)
            #expect(Bytes.integer(at: 6, in: bytes) == 123)
            #expect(Bytes.integer(at: 0, in: bytes) == nil)
            #expect(Bytes.end(of: Array("nope".utf8), in: bytes) == nil)
            #expect(Bytes.end(of: [], in: bytes) == nil)
            #expect(Bytes.end(of: Array(String(repeating: "x", count: 40).utf8), in: bytes) == nil)
        }
        // At most 18 digits are read (an Int cannot overflow).
        Array(String(repeating: "9", count: 30).utf8).withUnsafeBytes { bytes in
            #expect(Bytes.integer(at: 0, in: bytes) == 999_999_999_999_999_999)
        }
    }
}
