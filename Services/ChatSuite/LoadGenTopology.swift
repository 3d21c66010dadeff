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
struct LoadGenPlan: Sendable {
    let runId: String
    let users: Int
    let channels: Int
    let members: Int
    let sockets: Int
    let channelsPerWorkspace: Int

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

    func validate() throws -> Void {
        guard channels >= 1, members >= 1, users >= members, users <= channels * members, sockets >= 1, channelsPerWorkspace >= 1 else {
            throw LoadGenError("need channels ≥ 1, members ≥ 1, members ≤ users ≤ channels × members, sockets ≥ 1 (got channels \(channels), members \(members), users \(users), sockets \(sockets))")
        }
    }
}

/// A signed-up user.
struct LoadGenUser: Sendable {
    let id: UserID
    let email: String
    let nickname: String
    let token: String
    /// `exp` of the access token (seconds since 1970), if readable.
    let expires: Double?
}

/// A created channel.
struct LoadGenChannel: Sendable {
    let workspaceId: WorkspaceID
    let id: ChannelID
    let name: String
}

/// Everything setup created.
struct LoadGenWorld: Sendable {
    let plan: LoadGenPlan
    let users: [LoadGenUser]
    let channels: [LoadGenChannel]
    /// Channel indexes per user (`plan.channelsByUser()`).
    let channelsByUser: [[Int]]
    /// Sockets following each channel.
    let socketsPerChannel: [Int]
}

struct LoadGenError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
