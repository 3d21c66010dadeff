import Common
import Events
import NIOCore
import Testing

@testable import LoadGen

/// The protocols' client steps as the event loop runs them (`LoadGenConversation`), frame by
/// frame, without a server.
@Suite("Load generator conversations: each protocol's handshake, answers and recording")
struct ConversationTests {
    struct Harness {
        let log = DeliveryLog(expected: 8)
        let channel = ChannelID.generate()
        let conversation: LoadGenConversation

        init(_ kind: LoadGenSocketSpec.Kind, token: String = "tok") {
            let spec = LoadGenSocketSpec(index: 3, kind: kind, token: token, channels: [(index: 5, id: channel)])
            conversation = LoadGenConversation(
                spec: spec, markers: DeliveryMarkers(runId: "RUN"), log: log, handshake: HandshakeState(gate: AsyncGate(permits: 1)))
        }

        func receive(_ text: String, at nanos: UInt64 = 1) throws -> [LoadGenConversation.Action] {
            try conversation.received(ByteBuffer(string: text), at: nanos)
        }
    }

    @Test("Socket.IO: the open packet, a namespace per channel, ready on its ack, pings answered, messages recorded")
    func socketIO() throws {
        let h = Harness(.socketio)
        #expect(try h.conversation.opened().isEmpty)
        #expect(try h.receive(#"0{"sid":"a","pingInterval":25000}"#) == [.send("40/ws-channel-\(h.channel),")])
        #expect(h.log.socketEvents.ready == 0)
        #expect(try h.receive(#"40/ws-channel-\#(h.channel),{"sid":"b"}"#).isEmpty)
        #expect(h.log.socketEvents.ready == 1)
        #expect(try h.receive("2") == [.send("3")])
        #expect(try h.receive(#"42/ws-channel-\#(h.channel),["channel",{"content":"lg RUN-17","x":1}]"#, at: 99).isEmpty)
        #expect(h.log.allDeliveries.map(\.message) == [17])
        #expect(h.log.allDeliveries.map(\.nanos) == [99])
        #expect(h.log.allDeliveries.map(\.socket) == [3])
        #expect(throws: LoadGenProtocolError.self) { try h.receive(#"44/ws-channel-x,{"message":"no"}"#) }
    }

    @Test("Socket.IO upgraded from polling: 2probe → 3probe → 5, then the namespaces; anything else refused")
    func socketIOUpgrade() throws {
        let h = Harness(.socketioUpgrade)
        #expect(try h.conversation.opened() == [.send("2probe")])
        #expect(try h.receive("3probe") == [.send("5"), .send("40/ws-channel-\(h.channel),")])
        let other = Harness(.socketioUpgrade)
        _ = try other.conversation.opened()
        #expect(throws: LoadGenProtocolError.self) { try other.receive("0{}") }
    }

    @Test("native: hello → identify and heartbeats at its interval; ready at s = 1; a sequence gap counted; the heartbeat names the last s")
    func native() throws {
        let h = Harness(.native, token: "jwt")
        #expect(try h.conversation.opened().isEmpty)
        #expect(
            try h.receive(#"{"op":"hello","d":{"heartbeat_interval":4000}}"#) == [
                .send(#"{"op":"identify","d":{"token":"jwt"}}"#), .heartbeat(every: 4000),
            ])
        #expect(h.conversation.heartbeatFrame == #"{"op":"heartbeat","d":{"seq":null}}"#)
        #expect(try h.receive(#"{"op":"dispatch","t":"ready","s":1,"d":{}}"#).isEmpty)
        #expect(h.log.socketEvents.ready == 1)
        _ = try h.receive(#"{"op":"dispatch","t":"channel.message","s":2,"d":{"content":"lg RUN-4"}}"#)
        _ = try h.receive(#"{"op":"dispatch","t":"channel.message","s":4,"d":{"content":"lg RUN-5"}}"#)
        #expect(h.log.allDeliveries.map(\.message) == [4, 5])
        #expect(h.log.socketEvents.sequenceGaps == 1)
        #expect(h.conversation.heartbeatFrame == #"{"op":"heartbeat","d":{"seq":4}}"#)
        #expect(throws: LoadGenProtocolError.self) { try h.receive(#"{"op":"error","d":{"code":4003}}"#) }

        let silent = Harness(.native)
        #expect(throws: LoadGenProtocolError.self) { try silent.receive(#"{"op":"hello","d":{}}"#) }
    }

    @Test(
        "native: a dispatch other than ready moves the sequence from the frame's head without decoding (a gap still counted); ready, other ops and frames of another shape are decoded"
    )
    func nativeDispatchHead() throws {
        func sequence(_ frame: String) -> Int? {
            Array(frame.utf8).withUnsafeBytes { LoadGenConversation.dispatchSequence(in: $0) }
        }
        #expect(sequence(#"{"op":"dispatch","t":"presence.batch","s":17,"d":{"updates":[{"s":3}]}}"#) == 17)
        #expect(sequence(#"{"op":"dispatch","t":"typing","s":2,"d":{}}"#) == 2)
        #expect(sequence(#"{"op":"dispatch","t":"ready","s":1,"d":{}}"#) == nil)
        #expect(sequence(#"{"op":"heartbeat_ack"}"#) == nil)
        #expect(sequence(#"{"op":"dispatch","s":5,"t":"typing","d":{}}"#) == nil)
        #expect(sequence(#"{"op":"dispatch","t":"typing"}"#) == nil)
        #expect(sequence(#"{"op":"dispatch","t":"#) == nil)

        let h = Harness(.native, token: "jwt")
        _ = try h.receive(#"{"op":"hello","d":{"heartbeat_interval":4000}}"#)
        // Not JSON past its head: only the head is read.
        #expect(try h.receive(#"{"op":"dispatch","t":"ready","s":1,"d":{}}"#).isEmpty)
        #expect(try h.receive(#"{"op":"dispatch","t":"presence.batch","s":2,"d":not json"#).isEmpty)
        #expect(h.conversation.heartbeatFrame == #"{"op":"heartbeat","d":{"seq":2}}"#)
        _ = try h.receive(#"{"op":"dispatch","t":"presence.batch","s":4,"d":{}}"#)
        #expect(h.log.socketEvents.sequenceGaps == 1)
        #expect(h.log.socketEvents.ready == 1)
        // A ready out of place is still decoded and checked.
        #expect(throws: LoadGenProtocolError.self) { try h.receive(#"{"op":"dispatch","t":"ready","s":9,"d":{}}"#) }
    }

    @Test("STOMP: CONNECT → CONNECTED → a SUBSCRIBE with a receipt per channel → ready on the receipts; MESSAGE bodies recorded; ERROR ends it")
    func stomp() throws {
        let h = Harness(.stomp, token: "jwt")
        let opened = try h.conversation.opened()
        #expect(opened == [.send("CONNECT\naccept-version:1.2\nhost:chatsuite\naccess-token:jwt\nheart-beat:0,0\n\n\0")])
        #expect(
            try h.receive("CONNECTED\nversion:1.2\n\n\0") == [.send("SUBSCRIBE\nid:s-5\ndestination:/topic/group/\(h.channel)\nreceipt:r-5\n\n\0")])
        #expect(h.log.socketEvents.ready == 0)
        _ = try h.receive("RECEIPT\nreceipt-id:r-5\n\n\0")
        #expect(h.log.socketEvents.ready == 1)
        _ = try h.receive("MESSAGE\ndestination:/topic/group/x\n\n{\"message\":\"lg RUN-9\"}\0")
        #expect(h.log.allDeliveries.map(\.message) == [9])
        #expect(throws: LoadGenProtocolError.self) { try h.receive("ERROR\nmessage:no\n\n\0") }

        let beating = LoadGenConversation(
            spec: LoadGenSocketSpec(index: 0, kind: .stomp, token: "jwt", channels: [], stompHeartBeat: 10_000),
            markers: DeliveryMarkers(runId: "RUN"), log: DeliveryLog(expected: 1), handshake: HandshakeState(gate: AsyncGate(permits: 1)))
        #expect(try beating.opened() == [.send("CONNECT\naccept-version:1.2\nhost:chatsuite\naccess-token:jwt\nheart-beat:0,10000\n\n\0")])
        #expect(try beating.received(ByteBuffer(string: "CONNECTED\nversion:1.2\nheart-beat:10000,0\n\n\0"), at: 1).isEmpty)
        #expect(try beating.received(ByteBuffer(string: "\n"), at: 2).isEmpty)  // a heart-beat: ignored

        // A client that beats itself: says so in CONNECT, starts beating once connected, with EOLs.
        var spec = LoadGenSocketSpec(index: 0, kind: .stomp, token: "jwt", channels: [], stompHeartBeat: 0)
        spec.stompClientHeartBeat = 5_000
        let client = LoadGenConversation(
            spec: spec, markers: DeliveryMarkers(runId: "RUN"), log: DeliveryLog(expected: 1), handshake: HandshakeState(gate: AsyncGate(permits: 1)))
        #expect(try client.opened() == [.send("CONNECT\naccept-version:1.2\nhost:chatsuite\naccess-token:jwt\nheart-beat:5000,0\n\n\0")])
        #expect(try client.received(ByteBuffer(string: "CONNECTED\nversion:1.2\nheart-beat:0,5000\n\n\0"), at: 1) == [.heartbeat(every: 5_000)])
        #expect(client.heartbeatFrame == "\n")

        let refused = Harness(.stomp)
        _ = try refused.conversation.opened()
        #expect(throws: LoadGenProtocolError.self) { try refused.receive("ERROR\nmessage:bad token\n\n\0") }
    }

    @Test("nchan: ready when open; every message recorded, others counted")
    func nchan() throws {
        let h = Harness(.nchan)
        #expect(try h.conversation.opened().isEmpty)
        #expect(h.log.socketEvents.ready == 1)
        _ = try h.receive(#"{"content":"lg RUN-2"}"#)
        _ = try h.receive(#"{"content":"something else"}"#)
        #expect(h.log.allDeliveries.map(\.message) == [2])
        #expect(h.log.socketEvents.otherMessages == 1)
    }

    @Test("a WebSocket URL's host, port and path with its query; anything but ws:// is refused")
    func target() {
        let t = LoadGenConnection.Target(url: "ws://127.0.0.1:8180/socket.io/?EIO=4&transport=websocket")
        #expect(t?.host == "127.0.0.1")
        #expect(t?.port == 8180)
        #expect(t?.uri == "/socket.io/?EIO=4&transport=websocket")
        #expect(LoadGenConnection.Target(url: "ws://example.com")?.port == 80)
        #expect(LoadGenConnection.Target(url: "ws://example.com")?.uri == "/")
        #expect(LoadGenConnection.Target(url: "wss://example.com/x") == nil)
        #expect(LoadGenConnection.Target(url: "ws://:80/x") == nil)
        #expect(LoadGenConnection.Target(url: "ws://h:99999/x") == nil)
    }
}
