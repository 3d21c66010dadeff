import Common
import Events
import Foundation
import LoadGen
import NIOCore
import NIOHTTP1
import Synchronization

/// What every REST call of the drill ended with, and when.
struct DrillOutcome: Sendable {
    enum Kind: Sendable { case ok, clientError, unavailable, serverError, unreachable }
    var kind: Kind
    var code: String?
    var startedAt: ContinuousClock.Instant
}

/// The drill's steady traffic: channel messages sent over REST at a fixed rate, coin purchases
/// validated one at a time (each retried until its answer is definite), and native sockets that
/// receive and resume. Everything is recorded for the report.
final class DrillTraffic: Sendable {
    struct User: Sendable {
        var email: String
        var password: String
        var id: String
        var token: String
    }

    let client: GatewayClient
    let portOne: DrillPortOne
    let users: [User]
    let workspace: String
    let channels: [String]
    let runId: String
    private let tokens: Mutex<[String]>
    private let sends = Mutex<[DrillOutcome]>([])
    private let sentIds = Mutex<[String]>([])
    /// imp_uid → the user who paid and whether its validation ended (200 or E81).
    private let purchases = Mutex<[(impUID: String, user: Int, settled: Bool)]>([])
    private let paymentOutcomes = Mutex<[DrillOutcome]>([])
    /// Set by `stop()`: no new send or purchase starts; those in flight finish. Cancelling the
    /// tasks instead would cut requests the server may already have acted on (a purchase
    /// credited whose 200 the drill never read) and count them as failures.
    private let stopped = Atomic<Bool>(false)
    let sockets: [DrillNativeSocket]

    private init(client: GatewayClient, portOne: DrillPortOne, users: [User], workspace: String, channels: [String], runId: String, gateway: String) {
        self.client = client
        self.portOne = portOne
        self.users = users
        self.workspace = workspace
        self.channels = channels
        self.runId = runId
        tokens = Mutex(users.map(\.token))
        sockets = users.enumerated().map { DrillNativeSocket(index: $0.offset, gateway: gateway) }
    }

    /// `userCount` users in one workspace with `channelCount` channels everyone joined, made by
    /// the load generator's setup (which also waits until chat knows every membership).
    static func setUp(client: GatewayClient, portOne: DrillPortOne, gatewayPort: Int, userCount: Int, channelCount: Int) async throws -> DrillTraffic {
        let runId = String(UUID().uuidString.prefix(8)).lowercased()
        let plan = LoadGenPlan(
            runId: runId, users: userCount, channels: channelCount, members: userCount, sockets: userCount, channelsPerWorkspace: channelCount)
        let world = try await LoadGenSetup(rest: LoadGenREST(client: client), plan: plan, concurrency: 4).run()
        let users = world.users.map { User(email: $0.email, password: LoadGenSetup.password, id: $0.id.description, token: $0.token) }
        return DrillTraffic(
            client: client, portOne: portOne, users: users, workspace: world.channels[0].workspaceId.description,
            channels: world.channels.map(\.id.description), runId: runId, gateway: "ws://127.0.0.1:\(gatewayPort)"
        )
    }

    func token(_ user: Int) -> String { tokens.withLock { $0[user] } }

    /// Ends the traffic gracefully: `sendMessages` and `buyCoins` return once what is in flight
    /// has an answer (a purchase keeps being retried until it is definite).
    func stop() { stopped.store(true, ordering: .relaxed) }
    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Logs in again (access tokens last ten minutes; a full drill runs longer).
    func refreshTokens() async {
        for (i, user) in users.enumerated() {
            if let (status, body) = try? await client.send(.POST, "/v1/users/login", json: #"{"email":"\#(user.email)","password":"\#(user.password)"}"#),
                status == .ok, let token = (client.json(body)?["token"] as? [String: Any])?["accessToken"] as? String
            {
                tokens.withLock { $0[i] = token }
            }
        }
    }

    // MARK: REST sends

    /// Sends channel messages at `rate` per second until stopped; returns when every send in
    /// flight has its answer.
    func sendMessages(rate: Double) async {
        var n = 0
        let interval = Duration.seconds(1 / rate)
        var next = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            while !isStopped {
                let (user, channel, number) = (n % users.count, channels[n % channels.count], n)
                n += 1
                group.addTask { await self.send(user: user, channel: channel, number: number) }
                next += interval
                try? await Task.sleep(until: next)
            }
        }
    }

    private func send(user: Int, channel: String, number: Int) async {
        let started = ContinuousClock.now
        let path = "/v1/workspaces/\(workspace)/channels/\(channel)/chats"
        let outcome: DrillOutcome
        do {
            let (status, body) = try await client.send(.POST, path, token: token(user), json: #"{"content":"drill \#(runId)-\#(number)"}"#)
            let code = client.json(body)?["errorCode"] as? String
            if status == .ok, let id = client.json(body)?["chat_id"] as? String { sentIds.withLock { $0.append(id) } }
            outcome = DrillOutcome(kind: Self.kind(status, code), code: code, startedAt: started)
        } catch {
            outcome = DrillOutcome(kind: .unreachable, code: nil, startedAt: started)
        }
        sends.withLock { $0.append(outcome) }
    }

    static func kind(_ status: HTTPResponseStatus, _ code: String?) -> DrillOutcome.Kind {
        switch status.code {
        case 200..<300: return .ok
        case 503 where code != nil: return .unavailable
        case 500...: return .serverError
        default: return code == nil ? .serverError : .clientError
        }
    }

    var sendOutcomes: [DrillOutcome] { sends.withLock { $0 } }
    var acceptedMessageIds: [String] { sentIds.withLock { $0 } }

    // MARK: payments

    /// One purchase after another (a new imp_uid each), until stopped; each validation is
    /// retried until it is definite — 200, or E81 (already processed: a lost 200) — also after
    /// `stop()`, so no purchase the server may have credited is left unaccounted.
    func buyCoins(every interval: Duration) async {
        var n = 0
        while !isStopped {
            let user = n % users.count
            let impUID = "imp_drill_\(runId)_\(n)"
            let merchantUID = "merchant_drill_\(runId)_\(n)"
            n += 1
            portOne.register(impUID: impUID, merchantUID: merchantUID)
            let index = purchases.withLock {
                $0.append((impUID, user, false)); return $0.count - 1
            }
            var settled = false
            var attemptsAfterStop = 0
            // After stop, a minute of retries; a purchase still undecided then stays unsettled
            // and the coin check reports the difference.
            while !settled, attemptsAfterStop < 120 {
                if isStopped { attemptsAfterStop += 1 }
                let started = ContinuousClock.now
                let outcome: DrillOutcome
                do {
                    let (status, body) = try await client.send(
                        .POST, "/v1/store/pay/validation", token: token(user),
                        json: #"{"imp_uid":"\#(impUID)","merchant_uid":"\#(merchantUID)"}"#)
                    let code = client.json(body)?["errorCode"] as? String
                    outcome = DrillOutcome(kind: Self.kind(status, code), code: code, startedAt: started)
                    settled = status == .ok || code == "E81"
                } catch {
                    outcome = DrillOutcome(kind: .unreachable, code: nil, startedAt: started)
                }
                paymentOutcomes.withLock { $0.append(outcome) }
                if !settled { try? await Task.sleep(for: .milliseconds(500)) }
            }
            if settled { purchases.withLock { $0[index].settled = true } }
            if !isStopped { try? await Task.sleep(for: interval) }
        }
    }

    var paymentResults: [DrillOutcome] { paymentOutcomes.withLock { $0 } }

    /// Per user: coins expected from settled purchases, and the balance `/users/me` shows.
    func coinCheck() async -> [(expected: Int, actual: Int?)] {
        let settled = purchases.withLock { $0.filter { $0.settled } }
        var out: [(Int, Int?)] = []
        for (i, _) in users.enumerated() {
            let expected = settled.filter { $0.user == i }.count * DrillPortOne.coins
            var actual: Int?
            // The balance reaches auth through payment.v1: give it a moment to settle.
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if let (status, body) = try? await client.send(.GET, "/v1/users/me", token: token(i)), status == .ok {
                    actual = (client.json(body)?["sesacCoin"] as? NSNumber)?.intValue
                    if actual == expected { break }
                }
                try? await Task.sleep(for: .milliseconds(300))
            }
            out.append((expected, actual))
        }
        return out
    }

    /// Every stored message of the drill's channels (ids), read back through history.
    func storedMessageIds() async throws -> Set<String> {
        var ids = Set<String>()
        for channel in channels {
            let path = "/v1/workspaces/\(workspace)/channels/\(channel)/chats?cursor_date=2000-01-01T00:00:00.000Z"
            let (status, body) = try await client.send(.GET, path, token: token(0))
            guard status == .ok, let list = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [[String: Any]] else {
                throw LoadGenError("history of \(channel): HTTP \(status.code)")
            }
            for message in list {
                if let id = message["chat_id"] as? String, (message["content"] as? String)?.hasPrefix("drill \(runId)-") == true { ids.insert(id) }
            }
        }
        return ids
    }
}
