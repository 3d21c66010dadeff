import Events
import Foundation
import Testing

@testable import PresenceApp

/// The rules that decide who is online, on the table alone (no Kafka, no database).
@Suite("Presence session table")
struct SessionTableTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = UserID(UUID())
    let bob = UserID(UUID())

    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    func alive(_ table: inout SessionTable, _ gateway: String, _ instance: String, started: Double = 0, at seconds: Double) {
        table.alive(.init(gatewayId: gateway, instanceId: instance, startedAt: at(started), at: at(seconds), intervalMilliseconds: 5_000))
    }

    func open(_ table: inout SessionTable, _ id: String, _ user: UserID?, _ gateway: String, _ instance: String?, at seconds: Double) {
        table.opened(.init(sessionId: id, gatewayId: gateway, userId: user, clientProtocol: .native, openedAt: at(seconds), gatewayInstance: instance))
    }

    func checkpoint(_ table: inout SessionTable, _ id: String, _ user: UserID, _ gateway: String, attachedAt instance: String?, at seconds: Double) {
        table.checkpointed(
            .init(
                sessionId: id, gatewayId: gateway, userId: user, openedAt: t0, seq: 1, baseSeq: 0, conversations: [], marks: [],
                checkpointedAt: at(seconds), attached: instance != nil, gatewayInstance: instance))
    }

    @Test("three sessions of one user: online until the last one closes; anonymous sessions count for nobody")
    func devices() {
        var table = SessionTable(gatewayTimeout: 15)
        alive(&table, "gw", "i1", at: 0)
        for n in 1...3 { open(&table, "s\(n)", alice, "gw", "i1", at: 1) }
        open(&table, "anon", nil, "gw", "i1", at: 1)
        #expect(table.onlineUsers(now: at(2)) == [alice])
        table.closed(.init(sessionId: "s1", gatewayId: "gw", userId: alice, closedAt: at(3)))
        table.closed(.init(sessionId: "s2", gatewayId: "gw", userId: alice, closedAt: at(4)))
        #expect(table.onlineUsers(now: at(5)) == [alice])
        table.removed(sessionId: "s3", at: at(6))  // a tombstone alone also ends it
        #expect(table.onlineUsers(now: at(7)).isEmpty)
        #expect(table.lastSeen(alice, now: at(7)) == at(6))
    }

    @Test("a detached native session is not online; resumed on another gateway it is; the first gateway's late close is ignored")
    func detachAndResume() {
        var table = SessionTable(gatewayTimeout: 15)
        alive(&table, "gw-a", "a1", at: 0)
        alive(&table, "gw-b", "b1", at: 0)
        open(&table, "s", alice, "gw-a", "a1", at: 1)
        checkpoint(&table, "s", alice, "gw-a", attachedAt: nil, at: 2)
        #expect(table.onlineUsers(now: at(3)).isEmpty)
        #expect(table.lastSeen(alice, now: at(3)) == at(2))
        checkpoint(&table, "s", alice, "gw-b", attachedAt: "b1", at: 4)
        #expect(table.onlineUsers(now: at(5)) == [alice])
        // gw-a's resume window ends later; the session lives on at gw-b.
        table.closed(.init(sessionId: "s", gatewayId: "gw-a", userId: alice, closedAt: at(6)))
        #expect(table.onlineUsers(now: at(7)) == [alice])
    }

    @Test("a gateway that stops announcing itself takes its sessions with it after the timeout; lastSeen is its last announcement")
    func crashedGateway() {
        var table = SessionTable(gatewayTimeout: 15)
        alive(&table, "gw", "i1", at: 0)
        open(&table, "s1", alice, "gw", "i1", at: 1)
        alive(&table, "gw", "i1", at: 5)
        alive(&table, "gw", "i1", at: 10)
        #expect(table.onlineUsers(now: at(24.9)) == [alice])
        #expect(table.onlineUsers(now: at(25)).isEmpty)
        #expect(table.lastSeen(alice, now: at(25)) == at(10))
    }

    @Test("a new process of the same gateway id ends the old process's sessions at once; a stopped process's too")
    func restartedAndStoppedGateways() {
        var table = SessionTable(gatewayTimeout: 15)
        alive(&table, "gw", "old", started: 0, at: 0)
        open(&table, "s1", alice, "gw", "old", at: 1)
        alive(&table, "gw", "new", started: 3, at: 3)
        open(&table, "s2", bob, "gw", "new", at: 4)
        #expect(table.onlineUsers(now: at(4)) == [bob])
        table.stopped(.init(gatewayId: "gw", instanceId: "new", at: at(5)))
        #expect(table.onlineUsers(now: at(5)).isEmpty)
    }

    @Test("a session whose process never announced itself is believed for the timeout, then not")
    func unannouncedProcess() {
        var table = SessionTable(gatewayTimeout: 15)
        open(&table, "s1", alice, "gw", "i1", at: 0)
        #expect(table.onlineUsers(now: at(14)) == [alice])
        alive(&table, "gw", "i1", at: 14)  // the announcement arrives after all
        #expect(table.onlineUsers(now: at(20)) == [alice])
        open(&table, "s2", bob, "gw-old", nil, at: 0)  // an older gateway: no instance
        #expect(table.onlineUsers(now: at(16)) == [alice])
    }

    @Test("pruning forgets sessions dead past the horizon and silent processes without sessions, keeping lastSeen")
    func pruning() {
        var table = SessionTable(gatewayTimeout: 15)
        alive(&table, "gw", "i1", at: 0)
        open(&table, "s1", alice, "gw", "i1", at: 1)
        alive(&table, "gw2", "j1", at: 0)
        table.prune(now: at(100), horizon: 3_600)
        #expect(table.sessions.count == 1 && table.gateways.count == 2)
        table.prune(now: at(4_000), horizon: 3_600)
        #expect(table.sessions.isEmpty && table.gateways.isEmpty)
        #expect(table.lastSeen(alice, now: at(4_000)) == at(0))
    }
}
