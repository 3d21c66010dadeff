import Events

extension ChatInternal {
    /// A native session's `ready` snapshot (docs/native-gateway.md): the user's workspaces, the
    /// channels they are in and their DM rooms, each with its unread count (as `.../unreads` counts).
    /// The gateway splices the object into `ready` as chat wrote it, so chat writes the members in
    /// this order: `workspaces`, `channels`, `dms`, each entry's keys in declaration order.
    public struct SessionSnapshot: Codable, Sendable, Equatable {
        public struct Workspace: Codable, Sendable, Equatable {
            public var workspace_id: WorkspaceID

            public init(workspace_id: WorkspaceID) { self.workspace_id = workspace_id }
        }

        public struct Channel: Codable, Sendable, Equatable {
            public var channel_id: ChannelID
            public var workspace_id: WorkspaceID
            public var name: String?
            public var unread_count: Int

            public init(channel_id: ChannelID, workspace_id: WorkspaceID, name: String?, unread_count: Int) {
                self.channel_id = channel_id
                self.workspace_id = workspace_id
                self.name = name
                self.unread_count = unread_count
            }
        }

        public struct DM: Codable, Sendable, Equatable {
            public var room_id: RoomID
            public var workspace_id: WorkspaceID
            /// The other participant (the user itself in a note-to-self room).
            public var user_id: UserID?
            public var unread_count: Int

            public init(room_id: RoomID, workspace_id: WorkspaceID, user_id: UserID?, unread_count: Int) {
                self.room_id = room_id
                self.workspace_id = workspace_id
                self.user_id = user_id
                self.unread_count = unread_count
            }
        }

        public var workspaces: [Workspace]
        public var channels: [Channel]
        public var dms: [DM]

        public init(workspaces: [Workspace] = [], channels: [Channel] = [], dms: [DM] = []) {
            self.workspaces = workspaces
            self.channels = channels
            self.dms = dms
        }
    }
}
