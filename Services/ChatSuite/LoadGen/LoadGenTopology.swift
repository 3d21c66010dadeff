import Events
import Foundation

/// Who is in which channel, and which socket follows which channels: the load generator's plan,
/// computed from the options before anything is created, then filled with server ids by setup.
///
/// Channel `c` has the `members` users `(c·K + j) mod U` for `j < K` (distinct when `U ≥ K`), so
/// with `U < M·K` users are reused round-robin across channels. Member `j = 0` creates the channel.
/// Channels are grouped into workspaces of at most `channelsPerWorkspace` consecutive channels;
/// the creator of a workspace's first channel owns the workspace and invites everyone else of it.
/// Socket `s` belongs to user `s mod U` and follows every channel of that user.
public struct LoadGenPlan: Sendable {
    public let runId: String
    public let users: Int
    public let channels: Int
    public let members: Int
    public let sockets: Int
    public let channelsPerWorkspace: Int

    public init(runId: String, users: Int, channels: Int, members: Int, sockets: Int, channelsPerWorkspace: Int) {
        self.runId = runId
        self.users = users
        self.channels = channels
        self.members = members
        self.sockets = sockets
        self.channelsPerWorkspace = channelsPerWorkspace
    }

    func member(_ j: Int, of channel: Int) -> Int { (channel * members + j) % users }
    func membersOf(_ channel: Int) -> [Int] { (0..<members).map { member($0, of: channel) } }
    var workspaces: Int { (channels + channelsPerWorkspace - 1) / channelsPerWorkspace }
    func workspace(of channel: Int) -> Int { channel / channelsPerWorkspace }
    func channels(of workspace: Int) -> Range<Int> {
        workspace * channelsPerWorkspace..<min(channels, (workspace + 1) * channelsPerWorkspace)
    }
    func owner(of workspace: Int) -> Int { member(0, of: workspace * channelsPerWorkspace) }
    /// Every user of a workspace's channels, the owner first, each once.
    func usersOf(workspace: Int) -> [Int] {
        var seen = Set<Int>()
        var order: [Int] = []
        for c in channels(of: workspace) {
            for u in membersOf(c) where seen.insert(u).inserted { order.append(u) }
        }
        return order
    }
    func user(ofSocket socket: Int) -> Int { socket % users }

    /// (workspace, user) for every invitation setup sends: each user of a workspace but its owner.
    func invitations() -> [(workspace: Int, user: Int)] {
        (0..<workspaces).flatMap { w in usersOf(workspace: w).dropFirst().map { (w, $0) } }
    }

    /// (channel, member index) for every channel join setup sends: every member but the creator.
    func joins() -> [(channel: Int, member: Int)] {
        (0..<channels).flatMap { c in (1..<members).map { (c, $0) } }
    }

    /// Channels of each user, in channel order.
    func channelsByUser() -> [[Int]] {
        var result = [[Int]](repeating: [], count: users)
        for c in 0..<channels { for u in membersOf(c) { result[u].append(c) } }
        return result
    }

    /// For each channel, how many sockets follow it (the deliveries one message should produce).
    func socketsPerChannel() -> [Int] {
        let byUser = channelsByUser()
        var counts = [Int](repeating: 0, count: channels)
        for s in 0..<sockets { for c in byUser[user(ofSocket: s)] { counts[c] += 1 } }
        return counts
    }

    public func validate() throws {
        guard channels >= 1, members >= 1, users >= members, users <= channels * members, sockets >= 1, channelsPerWorkspace >= 1 else {
            throw LoadGenError(
                "need channels ≥ 1, members ≥ 1, members ≤ users ≤ channels × members, sockets ≥ 1 (got channels \(channels), members \(members), users \(users), sockets \(sockets))"
            )
        }
    }
}

/// A signed-up user.
public struct LoadGenUser: Sendable, Codable {
    public let id: UserID
    public let email: String
    public let nickname: String
    public let token: String
    /// `exp` of the access token (seconds since 1970), if readable.
    public let expires: Double?
}

/// A created channel.
public struct LoadGenChannel: Sendable, Codable {
    public let workspaceId: WorkspaceID
    public let id: ChannelID
    public let name: String
}

/// Everything setup created.
public struct LoadGenWorld: Sendable {
    public let plan: LoadGenPlan
    public let users: [LoadGenUser]
    public let channels: [LoadGenChannel]
    /// Channel indexes per user (`plan.channelsByUser()`).
    public let channelsByUser: [[Int]]
    /// Sockets following each channel.
    public let socketsPerChannel: [Int]
}

extension LoadGenWorld {
    /// What `--world` keeps between runs: the accounts and channels setup made on one suite.
    private struct Saved: Codable {
        let channels: Int
        let members: Int
        let channelsPerWorkspace: Int
        let users: [LoadGenUser]
        let channelIds: [LoadGenChannel]
    }

    func save(to path: String) throws {
        let saved = Saved(channels: plan.channels, members: plan.members, channelsPerWorkspace: plan.channelsPerWorkspace, users: users, channelIds: channels)
        try JSONEncoder().encode(saved).write(to: URL(fileURLWithPath: path))
    }

    /// The world saved at `path` under this run's plan (its run id marks this run's messages),
    /// or nil when there is none; an error when it was made for another plan.
    static func load(from path: String, plan: LoadGenPlan) throws -> LoadGenWorld? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let saved = try? JSONDecoder().decode(Saved.self, from: data) else {
            throw LoadGenError("\(path) is not a world this load generator saved: delete it or use another --world")
        }
        guard saved.channels == plan.channels, saved.members == plan.members, saved.users.count == plan.users,
            saved.channelsPerWorkspace == plan.channelsPerWorkspace
        else {
            throw LoadGenError(
                "\(path) was set up for \(saved.users.count) users, \(saved.channels) channels × \(saved.members) members: delete it or use another --world")
        }
        return LoadGenWorld(
            plan: plan, users: saved.users, channels: saved.channelIds, channelsByUser: plan.channelsByUser(), socketsPerChannel: plan.socketsPerChannel())
    }
}

public struct LoadGenError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
