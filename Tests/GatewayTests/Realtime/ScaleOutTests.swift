import Common
import Foundation
import GatewayApp
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

/// Scale-out on one machine: two gateways and three `chat-fanout` processes (the built
/// executable); 1 000 messages over 50 channels whose members are spread over both gateways; one
/// replica is killed with SIGKILL mid-run (no goodbye: the group reassigns its partitions after
/// the session timeout, and what it had not committed is delivered again and de-duplicated);
/// every socket gets every message of its channels exactly once, in order per channel.
@Suite("Scale-out: 2 gateways × 3 fan-out replicas", .serialized)
struct ScaleOutTests {
    @Test(
        "1 000 messages to 50 channels, members on both gateways, one of three fan-out processes killed (SIGKILL) mid-run: every socket receives every message of its channels exactly once, in order"
    )
    func twoGatewaysThreeReplicas() async throws {
        let run = UUID().uuidString.prefix(8).lowercased()
        // One author posts 1 000 messages through 8 connections: above the default per-user rate limit.
        let limits = ["GATEWAY_USER_RATE_PER_SECOND": "100000", "GATEWAY_USER_BURST": "100000"]
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: limits.merging(["GATEWAY_ID": "gw-a-\(run)"]) { $1 }) { s in
            var replicas: [TestProcess] = []
            for index in 0..<3 {
                replicas.append(
                    try TestProcess(
                        executable: "chat-fanout",
                        environment: [
                            "HTTP_PORT": "0", "KAFKA_BROKERS": s.cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
                            "INSTANCE_ID": "fanout-\(run)-\(index)",
                        ]))
            }
            defer { for replica in replicas { replica.signal(SIGKILL); _ = replica.reap() } }
            let second = try await RunningService.start {
                let environment = s.gatewayEnvironment.merging(["GATEWAY_ID": "gw-b-\(run)"]) { $1 }
                return try await GatewayApp.buildApplication(
                    settings: ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: environment, arguments: ["gateway"]),
                    logger: TestDatabase.logger
                )
            }
            let ports = [try #require(s.client.port), try #require(second.client.port)]

            // Six users; the owner is in all 50 channels, user i in the channels with (c + i) even.
            var users: [User] = []
            for i in 0..<6 { users.append(try await s.user("u\(i)")) }
            let owner = users[0]
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            for user in users.dropFirst() { try await s.invite(user, to: wid, by: owner) }
            for c in 1..<50 { _ = try await s.createChannel(owner, in: wid, name: "scale-\(c)") }
            let channels = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).map { id($0, "channel_id") }
            try #require(channels.count == 50)
            var members: [[String]] = Array(repeating: [], count: 6)  // per user: their channels
            members[0] = channels
            for (c, channel) in channels.enumerated() {
                for i in 1..<6 where (c + i) % 2 == 0 || c == 0 {
                    if c != 0 {
                        let joined = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(channel)/join", users[i], json: "{}")
                        #expect(joined.status == .ok, "join: \(String(buffer: joined.body))")
                    }
                    members[i].append(channel)
                }
            }
            // Sockets: the owner on both gateways, the others alternating; each identifies once
            // chat's read model lists all of its channels.
            let placements: [(user: Int, gateway: Int)] = [(0, 0), (0, 1), (1, 0), (2, 1), (3, 0), (4, 1), (5, 0)]
            var sockets: [(client: NativeTestClient, channels: Set<String>)] = []
            for (user, gateway) in placements {
                let expected = Set(members[user])
                var connected: NativeTestClient?
                try await eventually("u\(user) sees its \(expected.count) channels", timeout: .seconds(60)) {
                    let (client, ready) = try await NativeProtocolTests.connect(ports[gateway], users[user])
                    let listed = Set((ready["channels"] as? [[String: Any]] ?? []).compactMap { $0["channel_id"] as? String })
                    if listed == expected {
                        connected = client
                        return true
                    }
                    await client.kill()
                    try await Task.sleep(for: .milliseconds(300))
                    return false
                }
                sockets.append((try #require(connected), expected))
            }
            // Interest travels through Kafka: probe every channel until every socket has one
            // message from each of its channels.
            func received(_ client: NativeTestClient) -> [(channel: String, chat: String, content: String)] {
                client.dispatches("channel.message").map { (id($0.data, "channel_id"), id($0.data, "chat_id"), ($0.data["content"] as? String) ?? "") }
            }
            try await eventually("every gateway's interest reached the fan-out", timeout: .seconds(90)) {
                var missing = Set<String>()
                for socket in sockets {
                    missing.formUnion(socket.channels.subtracting(received(socket.client).map(\.channel)))
                }
                for channel in missing {
                    _ = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(channel)/chats", owner, json: #"{"content":"probe"}"#)
                }
                try await Task.sleep(for: .milliseconds(300))
                return missing.isEmpty
            }

            // 1 000 messages: 8 senders, each posting to its own channels in turn (so the order
            // per channel is the send order); a fan-out process is killed after 500.
            let sent = Locked<[String: [String]]>([:])  // channel → chat ids in send order
            let count = Locked(0)
            let killed = Locked(false)
            let victim = replicas[1]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<8 {
                    group.addTask {
                        let mine = channels.enumerated().filter { $0.offset % 8 == sender }.map(\.element)
                        for round in 0..<20 {
                            for channel in mine {
                                let author = owner
                                let answer = try await s.send(
                                    .post, "/v1/workspaces/\(wid)/channels/\(channel)/chats", author, json: #"{"content":"m \#(round)"}"#)
                                let chat = id(jsonObject(answer), "chat_id")
                                try #require(answer.status == .ok && !chat.isEmpty, "send: \(answer.status) \(String(buffer: answer.body))")
                                sent.withLock { $0[channel, default: []].append(chat) }
                                let total = count.withLock { value -> Int in
                                    value += 1
                                    return value
                                }
                                if total == 500 {
                                    victim.signal(SIGKILL)
                                    killed.withLock { $0 = true }
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let sentByChannel = sent.value
            #expect(sentByChannel.values.map(\.count).reduce(0, +) == 1_000)
            #expect(killed.value, "a replica was killed mid-run")

            func missing() -> [Int] {
                sockets.map { socket in
                    let got = Set(received(socket.client).map(\.chat))
                    return socket.channels.map { Set(sentByChannel[$0] ?? []).subtracting(got).count }.reduce(0, +)
                }
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while missing().contains(where: { $0 > 0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(
                missing().allSatisfy { $0 == 0 },
                "messages missing per socket \(placements): \(missing()); fan-out output: \(replicas.map { $0.output.suffix(1500) })")
            try await Task.sleep(for: .seconds(2))  // late duplicates would show now
            for (index, socket) in sockets.enumerated() {
                let chats = received(socket.client).filter { $0.content != "probe" }
                #expect(chats.count == Set(chats.map(\.chat)).count, "socket \(index): a message arrived twice")
                #expect(Set(chats.map(\.channel)).isSubset(of: socket.channels), "socket \(index): a message of a channel it is not in")
                for channel in socket.channels {
                    #expect(chats.filter { $0.channel == channel }.map(\.chat) == sentByChannel[channel] ?? [], "socket \(index): order in \(channel)")
                }
                #expect(socket.client.sequence == Array(1...socket.client.sequence.count), "socket \(index): sequence without gaps")
            }
            for socket in sockets { await socket.client.kill() }
            try await second.stop()
        }
    }
}
