import ChatInternalAPI
import Events
import Foundation
import NIOCore
import Testing

@testable import GatewayApp

/// A message reaches a native session twice when a resume replayed it from chat's history and its
/// live delivery arrives afterwards (fan-out lags the database), or when the delivery topic
/// redelivers it. Each is dispatched once, with one sequence number.
@Suite("Native sessions dispatch each message once")
struct NativeSessionTests {
    let conversation = UUID()

    func message(_ id: UUID, at milliseconds: Int64) -> NativeSession.Pending {
        NativeSession.Pending(
            type: "channel.message", conversationId: conversation, messageId: id, createdAtMilliseconds: milliseconds,
            json: ByteBuffer(string: #"{"chat_id":"\#(id)"}"#))
    }

    func session() -> NativeSession {
        let session = NativeSession(id: "s1", userId: UserID(UUID()), openedAt: Date(), maxMarks: 100)
        #expect(session.follow(conversation, kind: .channel, from: 0))
        #expect(session.attachReady(LiveConnection(maxQueuedFrames: 100, maxQueuedBytes: 1 << 20), json: "{}"))
        return session
    }

    @Test("a redelivered live message is dropped; typing events are not messages and always pass")
    func redelivery() {
        let session = session()
        let a = UUID()
        #expect(session.dispatch(message(a, at: 10)))
        #expect(session.dispatch(message(a, at: 10)))
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 2)  // ready + a
        let typing = NativeSession.Pending(
            type: "typing", conversationId: conversation, messageId: nil, createdAtMilliseconds: 0, json: ByteBuffer(string: "{}"))
        #expect(session.dispatch(typing))
        #expect(session.dispatch(typing))
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 4)
    }

    @Test("a message replayed by a resume is not dispatched again when its live delivery arrives late")
    func lateLiveAfterReplay() throws {
        let session = session()
        let (a, b) = (UUID(), UUID())
        let resumed = LiveConnection(maxQueuedFrames: 100, maxQueuedBytes: 1 << 20)
        guard case .cursors = session.beginResume(from: 1, on: resumed) else {
            Issue.record("the resume did not start")
            return
        }
        let replayed = ChatInternal.ReplayedMessage(
            kind: .channel, conversationId: conversation, messageId: a, createdAtMilliseconds: 10, json: #"{"chat_id":"\#(a)"}"#)
        #expect(session.finishResume(replayed: [replayed], removed: []))
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 2)
        #expect(session.dispatch(message(a, at: 10)))  // the late live copy
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 2)
        #expect(session.dispatch(message(b, at: 11)))
        let checkpoint = session.checkpoint(gatewayId: "gw", attachedAt: nil)
        #expect(checkpoint.seq == 3)
        #expect(checkpoint.marks.map(\.messageId.uuid) == [a, b])
    }
}
