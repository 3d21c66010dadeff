import ClientContract
import Events
import Hummingbird

// Gen A's workspace and channel shapes (Lilac's `Workspace` and `Channel`, client contract §1.9):
// integer ids (the aliases), `thumbnail` for the cover image, channels with `private` (0 or 1,
// an integer) and `workspace_id`. Built from the Gen B answers, which the same code produced.

struct GenerationAWorkspace: ResponseEncodable, Sendable {
    var workspace_id: Int64
    var name: String
    var description: String?
    var thumbnail: String
    var owner_id: Int64
    var createdAt: String
    var channels: [GenerationAChannel]?
    var workspaceMembers: [GenerationAMember]?

    init(_ workspace: WorkspaceResponse, _ book: AliasBook) {
        workspace_id = book.workspaces[workspace.workspace_id] ?? 0
        name = workspace.name
        description = workspace.description
        thumbnail = workspace.coverImage
        owner_id = book.users[workspace.owner_id] ?? 0
        createdAt = workspace.createdAt
    }

    /// `GET /workspaces/{id}` and search: with its channels and members.
    init(_ detail: WorkspaceDetailResponse, _ book: AliasBook) {
        let summary = WorkspaceResponse(
            workspace_id: detail.workspace_id, name: detail.name, description: detail.description, coverImage: detail.coverImage,
            owner_id: detail.owner_id, createdAt: detail.createdAt)
        self.init(summary, book)
        channels = detail.channels.map { GenerationAChannel($0, workspace: detail.workspace_id, book) }
        workspaceMembers = detail.workspaceMembers.map { GenerationAMember($0, alias: book.users[$0.user_id]) }
    }
}

struct GenerationAChannel: ResponseEncodable, Sendable {
    var workspace_id: Int64
    var channel_id: Int64
    var name: String
    var description: String?
    var owner_id: Int64
    /// Every channel of a `/v1` workspace is visible to all its members: 0.
    var `private`: Int
    var createdAt: String
    var channelMembers: [GenerationAMember]?

    init(_ channel: ChannelResponse, workspace: WorkspaceID, _ book: AliasBook) {
        workspace_id = book.workspaces[workspace] ?? 0
        channel_id = book.channels[channel.channel_id] ?? 0
        name = channel.name
        description = channel.description
        owner_id = book.users[channel.owner_id] ?? 0
        `private` = 0
        createdAt = channel.createdAt
    }

    /// `GET …/channels/{name}`: with its members.
    init(_ detail: ChannelDetailResponse, workspace: WorkspaceID, _ book: AliasBook) {
        let summary = ChannelResponse(
            channel_id: detail.channel_id, name: detail.name, description: detail.description, coverImage: detail.coverImage,
            owner_id: detail.owner_id, createdAt: detail.createdAt)
        self.init(summary, workspace: workspace, book)
        channelMembers = detail.channelMembers.map { GenerationAMember($0, alias: book.users[$0.user_id]) }
    }
}
