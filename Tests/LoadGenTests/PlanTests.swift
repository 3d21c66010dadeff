import Testing
@testable import LoadGen

@Suite("Load generator plan: who is in which channel, which socket follows what")
struct PlanTests {
    /// 3 channels × 2 members over 4 users, 2 channels per workspace, 6 sockets.
    let plan = LoadGenPlan(runId: "r", users: 4, channels: 3, members: 2, sockets: 6, channelsPerWorkspace: 2)

    @Test func membersAreAssignedRoundRobin() {
        #expect(plan.membersOf(0) == [0, 1])
        #expect(plan.membersOf(1) == [2, 3])
        #expect(plan.membersOf(2) == [0, 1])  // users are reused once every user has a channel
        #expect(plan.member(0, of: 1) == 2)
    }

    @Test func workspacesGroupConsecutiveChannels() {
        #expect(plan.workspaces == 2)
        #expect(plan.channels(of: 0) == 0..<2)
        #expect(plan.channels(of: 1) == 2..<3)
        #expect(plan.workspace(of: 1) == 0)
        #expect(plan.workspace(of: 2) == 1)
        #expect(plan.owner(of: 0) == 0)
        #expect(plan.owner(of: 1) == plan.member(0, of: 2))
    }

    @Test func usersOfAWorkspaceListTheOwnerFirstAndEachOnce() {
        #expect(plan.usersOf(workspace: 0) == [0, 1, 2, 3])
        #expect(plan.usersOf(workspace: 1) == [0, 1])
    }

    @Test func socketsFollowEveryChannelOfTheirUser() {
        #expect(plan.channelsByUser() == [[0, 2], [0, 2], [1], [1]])
        #expect((0..<6).map(plan.user(ofSocket:)) == [0, 1, 2, 3, 0, 1])
        // Sockets 0, 1, 4, 5 (users 0, 1) follow channels 0 and 2; sockets 2, 3 follow channel 1.
        #expect(plan.socketsPerChannel() == [4, 2, 4])
    }

    @Test func invitationsAreEveryoneButTheOwnerOncePerWorkspace() {
        let invitations = plan.invitations().map { [$0.workspace, $0.user] }
        #expect(invitations == [[0, 1], [0, 2], [0, 3], [1, 1]])
    }

    @Test func joinsAreEveryMemberButTheCreator() {
        #expect(plan.joins().map { [$0.channel, $0.member] } == [[0, 1], [1, 1], [2, 1]])
        let single = LoadGenPlan(runId: "r", users: 1, channels: 2, members: 1, sockets: 1, channelsPerWorkspace: 1)
        #expect(single.joins().isEmpty)
        #expect(single.invitations().isEmpty)
    }

    @Test("a channel's members are distinct whenever users ≥ members", arguments: [(5, 5, 25), (7, 3, 10), (10, 4, 40), (3, 3, 3)])
    func membersAreDistinct(channels: Int, members: Int, users: Int) throws {
        let plan = LoadGenPlan(runId: "r", users: users, channels: channels, members: members, sockets: users, channelsPerWorkspace: 2)
        try plan.validate()
        for c in 0..<channels {
            #expect(Set(plan.membersOf(c)).count == members)
        }
        // Every membership appears once in channelsByUser, and joins + creators cover them all.
        #expect(plan.channelsByUser().map(\.count).reduce(0, +) == channels * members)
        #expect(plan.joins().count + channels == channels * members)
    }

    @Test(
        "impossible plans are refused",
        arguments: [
            (users: 1, channels: 1, members: 2, sockets: 1, perWorkspace: 1),  // fewer users than members
            (users: 7, channels: 3, members: 2, sockets: 1, perWorkspace: 1),  // more users than memberships
            (users: 2, channels: 0, members: 2, sockets: 1, perWorkspace: 1),
            (users: 2, channels: 1, members: 0, sockets: 1, perWorkspace: 1),
            (users: 2, channels: 1, members: 2, sockets: 0, perWorkspace: 1),
            (users: 2, channels: 1, members: 2, sockets: 1, perWorkspace: 0),
        ])
    func refusesImpossiblePlans(users: Int, channels: Int, members: Int, sockets: Int, perWorkspace: Int) {
        let plan = LoadGenPlan(runId: "r", users: users, channels: channels, members: members, sockets: sockets, channelsPerWorkspace: perWorkspace)
        #expect(throws: LoadGenError.self) { try plan.validate() }
    }
}
