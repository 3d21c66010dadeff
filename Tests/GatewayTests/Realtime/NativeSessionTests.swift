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

    /// A session keeping 100 marks, attached to a connection that queues `frames` (none is written).
    func session(frames: Int = 100) -> NativeSession {
        let session = NativeSession(id: "s1", userId: UserID(UUID()), openedAt: Date(), maxMarks: 100)
        #expect(session.follow(conversation, kind: .channel, from: 0))
        #expect(session.attachReady(LiveConnection(maxQueuedFrames: frames, maxQueuedBytes: 1 << 20), json: "{}"))
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

    @Test("past its limit a session keeps the newest marks in order: the folded one moves the base and the cursor, a dropped id passes again")
    func marksPastTheLimit() {
        let session = session(frames: 1_000)
        let ids = (0..<350).map { _ in UUID() }
        for (n, id) in ids.enumerated() { #expect(session.dispatch(message(id, at: Int64(1_000 + n)))) }
        let checkpoint = session.checkpoint(gatewayId: "gw", attachedAt: nil)
        #expect(checkpoint.seq == 351)  // ready + 350
        #expect(checkpoint.marks.map(\.messageId.uuid) == Array(ids[250...]))
        #expect(checkpoint.marks.map(\.seq) == Array(252...351))
        #expect(checkpoint.baseSeq == 251)
        #expect(checkpoint.conversations.first?.createdAt == Date(milliseconds: 1_249))
        #expect(session.dispatch(message(ids[300], at: 1_300)))  // still marked: dropped
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 351)
        #expect(session.dispatch(message(ids[0], at: 1_000)))  // folded long ago: dispatched again
        #expect(session.checkpoint(gatewayId: "gw", attachedAt: nil).seq == 352)
    }
}

@Suite("A session's resume marks")
struct MarkListTests {
    func mark(_ seq: Int) -> NativeSession.Mark {
        NativeSession.Mark(seq: seq, conversationId: UUID(), createdAtMilliseconds: Int64(seq), messageId: UUID())
    }

    @Test("dropping the oldest one at a time over many compactions keeps the rest in order, with their ids")
    func dropsOldestInOrder() {
        var list = MarkList()
        var all: [NativeSession.Mark] = []
        for seq in 1...5_000 {
            let next = mark(seq)
            all.append(next)
            list.append(next)
            if list.count > 1_000 { #expect(list.removeFirst()?.seq == seq - 1_000) }
        }
        #expect(list.count == 1_000)
        #expect(list.items.map(\.seq) == Array(4_001...5_000))
        #expect(all[..<4_000].allSatisfy { !list.contains(messageId: $0.messageId) })
        #expect(all[4_000...].allSatisfy { list.contains(messageId: $0.messageId) })
    }

    @Test("removing by a condition after drops keeps the survivors in order; an empty list drops nothing")
    func removeAllAfterDrops() {
        let marks = (1...100).map(mark)
        var list = MarkList(marks)
        for seq in 1...60 { #expect(list.removeFirst()?.seq == seq) }
        list.removeAll { $0.seq % 2 == 0 }
        #expect(list.items.map(\.seq) == Array(stride(from: 61, through: 99, by: 2)))
        #expect(!list.contains(messageId: marks[61].messageId) && list.contains(messageId: marks[60].messageId))
        list.removeAll { _ in true }
        #expect(list.count == 0 && list.removeFirst() == nil)
        list.append(marks[0])
        #expect(list.items.map(\.seq) == [1])
    }
}

@Suite("The message ids among a session's marks")
struct MessageIdSetTests {
    /// Ids whose halves fold to the same value, so they share a home slot and form one probe run.
    func colliding(_ count: Int) -> [UUID] {
        (0..<count).map { k in
            let x = UInt64(k) &* 0x0101_0101_0101_0101
            let low = 0x1234_5678_9ABC_DEF0 ^ x
            let high = 0x0FED_CBA9_8765_4321 ^ x
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: low) { bytes.replaceSubrange(0..<8, with: $0) }
            withUnsafeBytes(of: high) { bytes.replaceSubrange(8..<16, with: $0) }
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
        }
    }

    @Test("inserts, lookups and removals agree with Set<UUID> over random operations, ids colliding or not")
    func agreesWithSet() {
        var generator = SystemRandomNumberGenerator()
        for pool in [(0..<300).map { _ in UUID() }, colliding(40) + (0..<40).map { _ in UUID() }] {
            var set = MessageIdSet()
            var model = Set<UUID>()
            let removedFromEmpty = set.remove(pool[0])
            #expect(!set.contains(pool[0]) && !removedFromEmpty)
            for _ in 0..<20_000 {
                let id = pool.randomElement(using: &generator) ?? pool[0]
                switch Int.random(in: 0..<3, using: &generator) {
                case 0:
                    let inserted = set.insert(id)
                    #expect(inserted == model.insert(id).inserted)
                case 1:
                    let removed = set.remove(id)
                    #expect(removed == (model.remove(id) != nil))
                default: #expect(set.contains(id) == model.contains(id))
                }
                #expect(set.count == model.count)
            }
            #expect(pool.allSatisfy { set.contains($0) == model.contains($0) })
            // Emptied in an order unlike the insertions: every id left stays reachable.
            for id in pool.reversed() where model.contains(id) {
                let removed = set.remove(id)
                #expect(removed)
                model.remove(id)
                #expect(model.allSatisfy { set.contains($0) })
            }
            #expect(set.count == 0)
        }
    }

    @Test("ids built to share a slot are all found, and found gone once removed from the middle of their run")
    func collidingRun() {
        let ids = colliding(20)
        var set = MessageIdSet(ids)
        #expect(set.count == 20 && ids.allSatisfy { set.contains($0) })
        for id in ids[5..<15] {
            let removed = set.remove(id)
            #expect(removed)
        }
        #expect(ids[..<5].allSatisfy { set.contains($0) } && ids[15...].allSatisfy { set.contains($0) })
        #expect(ids[5..<15].allSatisfy { !set.contains($0) })
        let (again, back) = (set.insert(ids[0]), set.insert(ids[7]))
        #expect(!again && back && set.count == 11)
    }
}
