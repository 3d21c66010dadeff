import Common
import Foundation
import Testing

@testable import LoadGen

@Suite("Load generator: the saved world, and the side-by-side table with a peer")
struct PeerTests {
    @Test("a saved world comes back under the new run's plan; one made for another plan is refused")
    func worldRoundTrip() throws {
        let plan = LoadGenPlan(runId: "old", users: 4, channels: 2, members: 2, sockets: 4, channelsPerWorkspace: 2)
        let world = ReportTests.world(plan)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lg-world-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try LoadGenWorld.load(from: path, plan: plan) == nil)
        try world.save(to: path)
        let next = LoadGenPlan(runId: "new", users: 4, channels: 2, members: 2, sockets: 8, channelsPerWorkspace: 2)
        let loaded = try #require(try LoadGenWorld.load(from: path, plan: next))
        #expect(loaded.plan.runId == "new")
        #expect(loaded.users.map(\.id) == world.users.map(\.id))
        #expect(loaded.users.map(\.token) == world.users.map(\.token))
        #expect(loaded.channels.map(\.id) == world.channels.map(\.id))
        #expect(loaded.socketsPerChannel == next.socketsPerChannel())
        let other = LoadGenPlan(runId: "x", users: 4, channels: 4, members: 2, sockets: 4, channelsPerWorkspace: 2)
        #expect(throws: LoadGenError.self) { try LoadGenWorld.load(from: path, plan: other) }
        // Not a saved world at all: a clear error, not a decoding trace.
        try Data("{\"not\": \"a world\"}".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: LoadGenError.self) { try LoadGenWorld.load(from: path, plan: plan) }
    }

    @Test("the repository's nchan configuration gets its port, prefix and worker count; a template without a worker count runs one worker only")
    func configurationTemplate() throws {
        let template = try String(contentsOfFile: PeerTests.repositoryFile("bench/peers/nchan.conf"), encoding: .utf8)
        for workers in [1, 2] {
            let text = try NchanPeer.configuration(template: template, port: 18_991, prefix: "/tmp/lg-x", workers: workers)
            #expect(!text.contains("@"))
            #expect(text.split(separator: "\n").contains("worker_processes \(workers);"))
            #expect(text.contains("listen 127.0.0.1:18991;"))
            #expect(text.contains("pid /tmp/lg-x/nginx.pid;"))
        }
        #expect(throws: LoadGenError.self) { try NchanPeer.configuration(template: template, port: 1, prefix: "/p", workers: 0) }
        #expect(throws: LoadGenError.self) { try NchanPeer.configuration(template: template, port: 1, prefix: "/p", workers: 65) }
        let fixed = "worker_processes 1;\nlisten 127.0.0.1:@PORT@;"
        #expect(try NchanPeer.configuration(template: fixed, port: 7, prefix: "/p", workers: 1) == "worker_processes 1;\nlisten 127.0.0.1:7;")
        #expect(throws: LoadGenError.self) { try NchanPeer.configuration(template: fixed, port: 7, prefix: "/p", workers: 2) }
    }

    /// A file of this repository, found from this source file's place in it.
    static func repositoryFile(_ path: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(path).path
    }

    @Test("a peer's world has the plan's channels and users, distinct channel ids, and no tokens")
    func peerWorld() {
        let plan = LoadGenPlan(runId: "p", users: 6, channels: 3, members: 2, sockets: 6, channelsPerWorkspace: 100)
        let world = LoadGenWorld(peerOf: plan)
        #expect(world.users.count == 6 && world.channels.count == 3)
        #expect(Set(world.channels.map(\.id)).count == 3)
        #expect(world.users.allSatisfy { $0.token.isEmpty })
        #expect(world.socketsPerChannel == plan.socketsPerChannel())
    }

    @Test("the table divides deliveries by each server's CPU (not the load generator's or PostgreSQL's) and gives the ratio")
    func comparison() {
        var suite = LoadGenReport()
        suite.received = 300_000
        suite.cpuSeconds = ["gateway": 10, "chat-fanout": 2, "broker": 8, "loadgen": 15, "postgres": 1]
        suite.gatewayRssPerIdleSocketKiB = 29
        var peer = LoadGenReport()
        peer.server = "nginx+nchan"
        peer.received = 300_000
        peer.cpuSeconds = ["nchan": 5, "loadgen": 14]
        let table = LoadGenComparison(reports: [suite, peer]).table()
        #expect(LoadGenComparison.serverCPU(suite) == 20)
        #expect(table.contains("chatsuite gateway"))
        #expect(table.contains("30000"))  // 300 000 / 10 s of gateway CPU
        #expect(table.contains("25000"))  // 300 000 / 12 s of gateway + fan-out
        #expect(table.contains("15000"))  // 300 000 / 20 s of gateway + fan-out + broker
        #expect(table.contains("60000"))  // 300 000 / 5 s of nchan
        #expect(table.contains("chatsuite gateway: 0.50× nginx+nchan's deliveries per CPU-second"))
        #expect(table.contains("chatsuite gateway+chat-fanout: 0.42× nginx+nchan's deliveries per CPU-second"))
        #expect(table.contains("chatsuite broker+chat-fanout+gateway: 0.25× nginx+nchan's deliveries per CPU-second"))
        // Without the split (no readings), no per-delivery line.
        #expect(!table.contains("CPU per delivery"))
    }

    @Test("with the CPU split, the table gives each server's user and system microseconds per delivery")
    func comparisonPerDelivery() {
        var suite = LoadGenReport()
        suite.received = 300_000
        suite.cpuSeconds = ["gateway": 9, "chat-fanout": 3.6, "loadgen": 14]
        suite.cpuSplit = [
            "gateway": ProcessStats.Usage(userSeconds: 3, systemSeconds: 6, voluntarySwitches: 1, involuntarySwitches: 2),
            "chat-fanout": ProcessStats.Usage(userSeconds: 2, systemSeconds: 1.6, voluntarySwitches: 1, involuntarySwitches: 1),
        ]
        var peer = LoadGenReport()
        peer.server = "nginx+nchan"
        peer.received = 300_000
        peer.cpuSeconds = ["nchan": 6.3, "loadgen": 15]
        peer.cpuSplit = [
            "nchan": ProcessStats.Usage(userSeconds: 1.2, systemSeconds: 5.1, voluntarySwitches: 1, involuntarySwitches: 1),
            "loadgen": ProcessStats.Usage(userSeconds: 9, systemSeconds: 6, voluntarySwitches: 1, involuntarySwitches: 1),
        ]
        let table = LoadGenComparison(reports: [suite, peer]).table()
        // 3 s / 300 000 = 10 µs; 6 s = 20 µs; nchan 1.2 s = 4 µs, 5.1 s = 17 µs (the load generator not counted).
        #expect(table.contains("CPU per delivery: chatsuite gateway 10.00 µs user + 20.00 µs system; nginx+nchan 4.00 µs user + 17.00 µs system"))
    }
}
