import Common
import Foundation
import NIOCore
import Synchronization
import Testing
@testable import LoadGen

@Suite("Load generator helpers")
struct SupportTests {
    @Test func concurrentMapKeepsOrderAndBoundsConcurrency() async throws {
        let inFlight = Locked((now: 0, max: 0))
        let results = try await concurrentMap(20, limit: 3) { i -> Int in
            inFlight.withLock {
                $0.now += 1; $0.max = max($0.max, $0.now)
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 1...5)))
            inFlight.withLock { $0.now -= 1 }
            return i * i
        }
        #expect(results == (0..<20).map { $0 * $0 })
        #expect(inFlight.value.max <= 3)
        #expect(inFlight.value.max >= 2)
        #expect(try await concurrentMap(0, limit: 4) { $0 }.isEmpty)
    }

    @Test func concurrentMapPassesErrorsOn() async {
        await #expect(throws: LoadGenError.self) {
            _ = try await concurrentMap(5, limit: 2) { i -> Int in
                if i == 3 { throw LoadGenError("three") }
                return i
            }
        }
    }

    @Test func asyncGateAdmitsAtMostItsPermits() async {
        let gate = AsyncGate(permits: 2)
        let inFlight = Locked((now: 0, max: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    await gate.acquire()
                    inFlight.withLock {
                        $0.now += 1; $0.max = max($0.max, $0.now)
                    }
                    try? await Task.sleep(for: .milliseconds(2))
                    inFlight.withLock { $0.now -= 1 }
                    gate.release()
                }
            }
        }
        #expect(inFlight.value.max == 2)
    }

    @Test func aHandshakeReleasesItsPermitOnce() async {
        let gate = AsyncGate(permits: 1)
        await gate.acquire()
        let handshake = HandshakeState(gate: gate)
        #expect(!handshake.isDone)
        #expect(handshake.finish(ready: true))
        #expect(!handshake.finish())
        #expect(handshake.isDone)
        #expect(handshake.wasReady)
        // Exactly one permit came back: one acquire passes, a second one waits.
        await gate.acquire()
        let second = Locked(false)
        let waiter = Task {
            await gate.acquire()
            second.withLock { $0 = true }
        }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!second.value)
        gate.release()
        await waiter.value
        #expect(second.value)
    }

    @Test func jwtPeekReadsTheExpiryOfAnUnverifiedToken() throws {
        // A payload whose base64url form needs both '-'/'_' translation and padding.
        let payload = #"{"sub":"ü?>","exp":1700000000}"#
        let encoded = Data(payload.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let token = "eyJhbGciOiJub25lIn0.\(encoded).sig"
        #expect(JWTPeek.claims(of: token)?["sub"] as? String == "ü?>")
        #expect(JWTPeek.expiry(of: token) == 1_700_000_000)
        #expect(JWTPeek.expiry(of: "a.b") == nil)
        #expect(JWTPeek.expiry(of: "a.!!!.c") == nil)
    }

    @Test func socketURLsFollowTheGatewayScheme() {
        #expect(SocketPool.Server("http://127.0.0.1:8080").ws == "ws://127.0.0.1:8080")
        #expect(SocketPool.Server("https://chat.example.com").ws == "wss://chat.example.com")
    }

    @Test("with --second-gateway the second half of the sockets connect to it, the first half to --gateway")
    func secondGatewayTakesTheSecondHalf() {
        let specs = (0..<4).map { LoadGenSocketSpec(index: $0, kind: .socketio, token: "t", channels: [], stompHeartBeat: 0) }
        func servers(_ second: String?) -> [String] {
            let pool = SocketPool(
                specs: specs, gatewayURL: "http://127.0.0.1:8180", secondGatewayURL: second, markers: DeliveryMarkers(runId: "r"),
                log: DeliveryLog(expected: 0), handshakes: 1)
            return specs.map { pool.server(for: $0.index).http }
        }
        #expect(servers("http://127.0.0.1:8190") == ["http://127.0.0.1:8180", "http://127.0.0.1:8180", "http://127.0.0.1:8190", "http://127.0.0.1:8190"])
        #expect(servers(nil) == Array(repeating: "http://127.0.0.1:8180", count: 4))
    }

    @Test func socketErrorsAreDescribedWithTheirProtocol() {
        #expect(SocketPool.describe(CancellationError(), kind: .native) == "native: cancelled")
        #expect(SocketPool.describe(LoadGenProtocolError("boom"), kind: .socketio) == "socketio: boom")
    }

    @Test func gatewayAnswersAreReadAsJSONObjects() {
        let client = GatewayClient(base: "http://127.0.0.1:1", sesacKey: "k")
        #expect(client.json(ByteBuffer(string: #"{"errorCode":"E03"}"#))?["errorCode"] as? String == "E03")
        #expect(client.json(ByteBuffer(string: "[1]")) == nil)
        #expect(client.json(ByteBuffer(string: "not json")) == nil)
        #expect(jsonObject(ByteBuffer(string: #"{"op":"hello"}"#))?["op"] as? String == "hello")
    }

    @Test func durationsInMilliseconds() {
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
        #expect(Duration.microseconds(250).milliseconds == 0.25)
        let a = monotonicNanos()
        let b = monotonicNanos()
        #expect(b >= a)
    }

    #if os(Linux)
        @Test func processStatisticsComeFromProc() throws {
            let rss = try #require(ProcessStats.rssKiB(pid: getpid()))
            #expect(rss > 1024)
            let cpu = try #require(ProcessStats.cpuSeconds(pid: getpid()))
            #expect(cpu >= 0)
            #expect(ProcessStats.rssKiB(pid: Int32.max) == nil)
            #expect(ProcessStats.cpuSeconds(pid: Int32.max) == nil)
            #expect(ProcessStats.raiseFileLimit() > 64)
        }

        @Test("a process's usage over a window: user seconds grow with work, voluntary switches with sleeps, threads that end meanwhile count nothing")
        func usageComesFromProc() async throws {
            // Four threads that switch 50 times each, are alive at the first reading and end
            // before the second: summing live threads' totals would lose their 200+ switches from
            // the window and go below this thread's own 20.
            let tids = Mutex<[Int32]>([])
            let ready = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            for _ in 0..<4 {
                Thread {
                    // The thread's id: /proc/thread-self links to <pid>/task/<tid>.
                    let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
                    if let tid = link.split(separator: "/").last.flatMap({ Int32($0) }) { tids.withLock { $0.append(tid) } }
                    for _ in 0..<50 { usleep(100) }
                    ready.signal()
                    release.wait()
                }.start()
            }
            for _ in 0..<4 { ready.wait() }
            let before = try #require(ProcessStats.reading(pid: getpid(), withChildren: false))
            let ending = tids.withLock { $0 }
            #expect(ending.count == 4)
            #expect(ending.allSatisfy { before.switches[$0] != nil }, "the threads are alive at the first reading")
            for _ in 0..<4 { release.signal() }
            let gone = { ending.allSatisfy { !FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") } }
            let waitEnd = ContinuousClock.now + .seconds(5)
            while !gone(), ContinuousClock.now < waitEnd { try await Task.sleep(for: .milliseconds(5)) }
            #expect(gone(), "the four threads ended before the second reading")
            // Work on this thread for 300 ms of wall time, then sleep 20 times.
            let start = ContinuousClock.now
            var x: UInt64 = 1
            while ContinuousClock.now - start < .milliseconds(300) {
                for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
            }
            for _ in 0..<20 { usleep(2_000) }
            let after = try #require(ProcessStats.reading(pid: getpid(), withChildren: false))
            let used = after.usage(since: before)
            #expect(x != 0)
            #expect(used.userSeconds > 0.05, "user seconds: \(used)")
            #expect(used.systemSeconds >= 0)
            #expect(used.voluntarySwitches >= 20, "each sleep switches out: \(used)")
            #expect(used.involuntarySwitches >= 0)
            let cpu = try #require(ProcessStats.cpuSeconds(pid: getpid(), withChildren: false))
            #expect(abs(cpu - (after.userSeconds + after.systemSeconds)) < 0.5)
            #expect(ProcessStats.reading(pid: Int32.max) == nil)
        }

        @Test("a window's switches: per thread, a thread gone counts nothing, a new or reused id counts from zero")
        func switchesPerThread() {
            typealias Switches = ProcessStats.Switches
            let before = ProcessStats.Reading(
                userSeconds: 1, systemSeconds: 2,
                switches: [
                    1: Switches(voluntary: 10, involuntary: 5), 2: Switches(voluntary: 100, involuntary: 100), 3: Switches(voluntary: 50, involuntary: 9),
                ])
            let after = ProcessStats.Reading(
                userSeconds: 1.5, systemSeconds: 2.25,
                switches: [1: Switches(voluntary: 14, involuntary: 6), 3: Switches(voluntary: 2, involuntary: 1), 4: Switches(voluntary: 7, involuntary: 3)])
            let used = after.usage(since: before)
            // Thread 1: +4 / +1; 2 ended: nothing; 3 is a reused id: 2 / 1; 4 is new: 7 / 3.
            #expect(used == ProcessStats.Usage(userSeconds: 0.5, systemSeconds: 0.25, voluntarySwitches: 13, involuntarySwitches: 5))
        }

        @Test("a child that ends within the window keeps its CPU in the window (its parent's reaped-children time)")
        func reapedChildrenCount() async throws {
            // A shell that starts a busy child and, once the test has taken its first reading
            // (the go file exists), kills and reaps it, then becomes a sleep (exec keeps its
            // reaped-children time). No fixed delay: the child is alive at the first reading
            // however slow the machine. SIGKILL: a child may inherit an ignored SIGTERM.
            let go = FileManager.default.temporaryDirectory.appendingPathComponent("reaped-\(UUID().uuidString)").path
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = [
                "-c", "sh -c 'while :; do :; done' & c=$!; while [ ! -e '\(go)' ]; do sleep 0.05; done; kill -9 $c; wait $c; exec sleep 60",
            ]
            try shell.run()
            let parent = shell.processIdentifier
            var busy: [Int32] = []
            // Whatever happens, nothing is left burning a core or sleeping.
            defer {
                for pid in busy + [parent] { kill(pid, SIGKILL) }
                try? FileManager.default.removeItem(atPath: go)
            }
            let start = ContinuousClock.now
            while busy.isEmpty, ContinuousClock.now - start < .seconds(10) {
                busy = ProcessStats.children(of: parent)
                if busy.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(!busy.isEmpty, "the busy child started")
            try await Task.sleep(for: .milliseconds(300))
            let before = try #require(ProcessStats.reading(pid: parent))
            // The busy one of the shell's children (another may be a `sleep 0.05`).
            let childBefore = busy.compactMap { ProcessStats.cpuSeconds(pid: $0, withChildren: false) }.max() ?? 0
            #expect(childBefore > 0.01, "the child was busy before the first reading: \(childBefore) s")
            #expect(FileManager.default.createFile(atPath: go, contents: nil))
            while !ProcessStats.children(of: parent).isEmpty, ContinuousClock.now - start < .seconds(20) {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(ProcessStats.children(of: parent).isEmpty, "the child ended and was reaped before the second reading")
            let after = try #require(ProcessStats.reading(pid: parent))
            let used = after.usage(since: before)
            // The child's CPU from the window is in it (it ran until the kill); summing live
            // children only would give about minus `childBefore`.
            #expect(used.cpuSeconds >= 0, "\(used)")
            #expect(after.userSeconds + after.systemSeconds >= childBefore, "the reaped child's CPU is counted: \(after.userSeconds + after.systemSeconds) s")
        }
    #endif
}
