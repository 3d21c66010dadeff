import Events

extension ChatInternal {
    /// A native session's `ready` snapshot (docs/native-gateway.md): the user's workspaces, the
    /// channels they are in, their DM rooms and their personal rooms, each with its unread count
    /// (as `.../unreads` counts). The gateway splices the object into `ready` as chat wrote it, so
    /// chat writes the members in this order: `workspaces`, `channels`, `dms`, `rooms`, each
    /// entry's keys in declaration order.
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

        /// A personal room (outside any workspace, `/v1/rooms`).
        public struct Room: Codable, Sendable, Equatable {
            public var room_id: RoomID
            public var group: Bool
            /// A group's name; nil for a friends' room.
            public var name: String?
            /// A friends' room's other member; nil for a group.
            public var user_id: UserID?
            public var unread_count: Int

            public init(room_id: RoomID, group: Bool, name: String?, user_id: UserID?, unread_count: Int) {
                self.room_id = room_id
                self.group = group
                self.name = name
                self.user_id = user_id
                self.unread_count = unread_count
            }
        }

        public var workspaces: [Workspace]
        public var channels: [Channel]
        public var dms: [DM]
        public var rooms: [Room]

        public init(workspaces: [Workspace] = [], channels: [Channel] = [], dms: [DM] = [], rooms: [Room] = []) {
            self.workspaces = workspaces
            self.channels = channels
            self.dms = dms
            self.rooms = rooms
        }

        enum CodingKeys: String, CodingKey { case workspaces, channels, dms, rooms }

        /// `rooms` may be absent: a chat older than personal rooms did not write it.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            workspaces = try c.decode([Workspace].self, forKey: .workspaces)
            channels = try c.decode([Channel].self, forKey: .channels)
            dms = try c.decode([DM].self, forKey: .dms)
            rooms = try c.decodeIfPresent([Room].self, forKey: .rooms) ?? []
        }
    }
}
