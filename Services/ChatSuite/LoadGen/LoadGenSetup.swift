import Common
import Events
import Foundation
import NIOCore
import NIOHTTP1

/// Creates the plan's users, workspaces, channels and memberships through the gateway's REST API,
/// then waits until chat's membership read model (fed by `workspace.v1`) knows every member.
public struct LoadGenSetup: Sendable {
    /// Every generated user's password (the drill logs in again with it).
    public static let password = "loadgen password 1"

    let rest: LoadGenREST
    let plan: LoadGenPlan
    /// Requests in flight during setup (bcrypt makes sign-ups CPU-bound at the auth service).
    let concurrency: Int

    public init(rest: LoadGenREST, plan: LoadGenPlan, concurrency: Int) {
        self.rest = rest
        self.plan = plan
        self.concurrency = concurrency
    }

    public func run() async throws -> LoadGenWorld {
        let plan = self.plan
        let rest = self.rest
        let started = ContinuousClock.now
        say(
            "setup: \(plan.users) users, \(plan.workspaces) workspace(s), \(plan.channels) channels × \(plan.members) members (\(concurrency) requests in flight)"
        )

        let signups = Progress("signed up", total: plan.users)
        let users = try await concurrentMap(plan.users, limit: concurrency) { i -> LoadGenUser in
            let email = "lg-\(plan.runId)-\(i)@example.com"
            let nickname = "lg\(i)"
            let body = try await rest.call(
                .POST, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(Self.password)","nickname":"\#(nickname)"}"#, what: "join \(email)")
            guard let object = rest.client.json(body), let idText = object["user_id"] as? String, let id = UserID(idText),
                let token = (object["token"] as? [String: Any])?["accessToken"] as? String
            else { throw LoadGenError("join \(email): unexpected answer") }
            signups.step()
            return LoadGenUser(id: id, email: email, nickname: nickname, token: token, expires: JWTPeek.expiry(of: token))
        }

        let workspaceIds = try await concurrentMap(plan.workspaces, limit: concurrency) { w -> WorkspaceID in
            let owner = users[plan.owner(of: w)]
            let body = try await rest.call(
                .POST, "/v1/workspaces", token: owner.token, json: #"{"name":"lg-\#(plan.runId)-\#(w)"}"#, what: "create workspace \(w)")
            guard let text = rest.client.json(body)?["workspace_id"] as? String, let id = WorkspaceID(text) else {
                throw LoadGenError("create workspace \(w): no workspace_id")
            }
            return id
        }
        say("  created \(workspaceIds.count) workspace(s)")

        let invitations = plan.invitations()
        let invited = Progress("invited", total: invitations.count)
        _ = try await concurrentMap(invitations.count, limit: concurrency) { i in
            let (w, u) = invitations[i]
            let owner = users[plan.owner(of: w)]
            // A user who signed up a moment ago reaches workspace's profiles through auth.user.v1:
            // E03 (unknown account) until then.
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let body = try await rest.call(
                    .POST, "/v1/workspaces/\(workspaceIds[w])/members", token: owner.token, json: #"{"email":"\#(users[u].email)"}"#,
                    what: "invite \(users[u].email)", alsoAccept: ContinuousClock.now < deadline ? ["E03", "E12"] : ["E12"])
                guard rest.client.json(body)?["errorCode"] as? String == "E03" else { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            invited.step()
        }

        let created = Progress("created channels", total: plan.channels)
        let channels = try await concurrentMap(plan.channels, limit: concurrency) { c -> LoadGenChannel in
            let creator = users[plan.member(0, of: c)]
            let workspace = workspaceIds[plan.workspace(of: c)]
            let name = "lg-\(c)"
            let body = try await rest.call(
                .POST, "/v1/workspaces/\(workspace)/channels", token: creator.token, json: #"{"name":"\#(name)"}"#, what: "create channel \(c)")
            guard let text = rest.client.json(body)?["channel_id"] as? String, let id = ChannelID(text) else {
                throw LoadGenError("create channel \(c): no channel_id")
            }
            created.step()
            return LoadGenChannel(workspaceId: workspace, id: id, name: name)
        }

        let joins = plan.joins()
        let joined = Progress("joined channels", total: joins.count)
        _ = try await concurrentMap(joins.count, limit: concurrency) { i in
            let (c, j) = joins[i]
            let channel = channels[c]
            _ = try await rest.call(
                .POST, "/v1/workspaces/\(channel.workspaceId)/channels/\(channel.id)/join", token: users[plan.member(j, of: c)].token,
                what: "join channel \(c)", alsoAccept: ["E12"])
            joined.step()
        }
        say(String(format: "  REST setup done in %.1f s", (ContinuousClock.now - started).milliseconds / 1000))

        // chat learns memberships from workspace.v1: a member can read the channel once it has.
        let waitStarted = ContinuousClock.now
        let deadline = waitStarted + .seconds(300)
        let pairs = (0..<plan.channels).flatMap { c in (0..<plan.members).map { (c, $0) } }
        _ = try await concurrentMap(pairs.count, limit: concurrency * 2) { i in
            let (c, j) = pairs[i]
            let channel = channels[c]
            let path = "/v1/workspaces/\(channel.workspaceId)/channels/\(channel.id)/chats?cursor_date=2100-01-01T00:00:00.000Z"
            while try await rest.client.send(.GET, path, token: users[plan.member(j, of: c)].token).status != .ok {
                guard ContinuousClock.now < deadline else { throw LoadGenError("chat does not know member \(j) of channel \(c) after 300 s") }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        say(String(format: "  chat knows all %d memberships after %.1f s", pairs.count, (ContinuousClock.now - waitStarted).milliseconds / 1000))
        return LoadGenWorld(plan: plan, users: users, channels: channels, channelsByUser: plan.channelsByUser(), socketsPerChannel: plan.socketsPerChannel())
    }
}

/// REST calls of the load generator: answers other than 200 are errors (with the body's error
/// code), except `alsoAccept`; 5xx, 429 and transport errors are retried a few times.
public struct LoadGenREST: Sendable {
    let client: GatewayClient

    public init(client: GatewayClient) { self.client = client }

    @discardableResult
    func call(_ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil, what: String, alsoAccept: Set<String> = []) async throws
        -> ByteBuffer
    {
        var attempt = 0
        while true {
            attempt += 1
            let response: (status: HTTPResponseStatus, body: ByteBuffer)
            do {
                response = try await client.send(method, path, token: token, json: json)
            } catch {
                guard attempt < 5 else { throw LoadGenError("\(what): \(error)") }
                try await Task.sleep(for: .milliseconds(200 * attempt))
                continue
            }
            let (status, body) = response
            if status == .ok { return body }
            let code = client.json(body)?["errorCode"] as? String
            if let code, alsoAccept.contains(code) { return body }
            if (status.code >= 500 || status == .tooManyRequests), attempt < 5 {
                try await Task.sleep(for: .milliseconds(200 * attempt))
                continue
            }
            throw LoadGenError("\(what): HTTP \(status.code) \(code ?? String(buffer: body).prefix(200).description)")
        }
    }
}

/// Prints "  <what> n/total (t s)" about twenty times over a phase.
final class Progress: Sendable {
    private let what: String
    private let total: Int
    private let started = ContinuousClock.now
    private let done = Locked(0)

    init(_ what: String, total: Int) {
        self.what = what
        self.total = total
    }

    func step() {
        let n = done.withLock {
            $0 += 1; return $0
        }
        if n == total || n % max(1, total / 20) == 0 {
            say(String(format: "  %@ %d/%d (%.1f s)", what, n, total, (ContinuousClock.now - started).milliseconds / 1000))
        }
    }
}

/// Reads claims of a token the load generator was just issued (no verification needed).
enum JWTPeek {
    static func claims(of token: String) -> [String: Any]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    static func expiry(of token: String) -> Double? {
        (claims(of: token)?["exp"] as? NSNumber)?.doubleValue
    }
}
