import Events
import Foundation
import HTTPTypes

/// What chat serves the gateway and nobody else (docs/chat-api.md): the reader check, a native
/// session's `ready` snapshot and a resume's replay. Chat mounts the routes, the gateway calls
/// them; both take the paths, headers and wire types from here. The routes sit outside `/v1`, so
/// the gateway's route table never forwards a client to them; they carry no forwarded identity
/// (the user is in the path).
public enum ChatInternal {
    /// Where the internal routes are mounted.
    public static let prefix = "/internal/v1"

    /// `GET /internal/v1/conversations/{conversation}/readers/{user}`: 204 with a `Readable` in its
    /// headers when the user may read the channel (a member) or the DM room (a participant still
    /// in its workspace), else 404; 400 for malformed ids.
    public enum ReaderCheck {
        /// The route under `prefix`; its parameters are `conversation` and `user`.
        public static let route = "conversations/:conversation/readers/:user"

        public static func path(conversation: UUID, user: UUID) -> String {
            "\(prefix)/conversations/\(conversation.lowercased)/readers/\(user.lowercased)"
        }

        /// The same check for a conversation a legacy client names by its integer alias:
        /// `c-{alias}` a channel, `r-{alias}` a room; the answer names the conversation's id.
        public static func path(alias: Int64, kind: ChatEvents.Conversation.Kind, user: UUID) -> String {
            "\(prefix)/conversations/\(kind == .dm ? "r" : "c")-\(alias)/readers/\(user.lowercased)"
        }

        public static let kindHeader = HTTPField.Name("Chatsuite-Conversation-Kind")!
        public static let idHeader = HTTPField.Name("Chatsuite-Conversation-Id")!
        public static let workspaceHeader = HTTPField.Name("Chatsuite-Conversation-Workspace")!
    }

    /// `GET /internal/v1/communities/{community}/members/{user}`: 204 with the workspace's id in
    /// `ReaderCheck.workspaceHeader` when the user is a member of the workspace, which is named by
    /// its id or by its integer alias (a Smooth community id); else 404; 400 for malformed ids.
    public enum CommunityCheck {
        public static let route = "communities/:community/members/:user"

        public static func path(community: String, user: UUID) -> String {
            "\(prefix)/communities/\(community)/members/\(user.lowercased)"
        }
    }

    /// `GET /internal/v1/channel-aliases/{alias}`: 204 with the channel's id in
    /// `ReaderCheck.idHeader` when a channel has this integer alias (Gen A's Socket.IO namespaces
    /// `/ws-channel-{alias}` joined without credentials, as `/ws-channel-{id}` are), else 404;
    /// 400 when it is not an alias.
    public enum ChannelAlias {
        public static let route = "channel-aliases/:alias"

        public static func path(alias: Int64) -> String { "\(prefix)/channel-aliases/\(alias)" }
    }

    /// `GET /internal/v1/users/{user}/session` → a `SessionSnapshot` (JSON); 400 for a malformed id.
    public enum Session {
        /// The route under `prefix`; its parameter is `user`.
        public static let route = "users/:user/session"

        public static func path(user: UserID) -> String { "\(prefix)/users/\(user)/session" }
    }

    /// `POST /internal/v1/users/{user}/replay` with a `ReplayRequest` → `ReplayLine`s (text, one per
    /// line), or, when more than `limit` messages and changes were found, an empty body and
    /// `moreHeader: true` (the session is too far behind to resume). 400 for a malformed request.
    public enum Replay {
        /// The route under `prefix`; its parameter is `user`.
        public static let route = "users/:user/replay"

        public static func path(user: UserID) -> String { "\(prefix)/users/\(user)/replay" }

        public static let moreHeader = HTTPField.Name("Chatsuite-Replay-More")!
        /// What a request may ask: the limit (messages and changes together), and at most this many cursors.
        public static let limits: ClosedRange<Int> = 1...10_000
        public static let maxCursors = 10_000
    }
}

extension ChatInternal {
    /// A reader check's answer: the conversation's kind and workspace (the gateway ends a user's DM
    /// namespaces of a workspace they leave).
    public struct Readable: Sendable, Equatable {
        public var kind: ChatEvents.Conversation.Kind
        public var workspaceId: UUID?
        /// The conversation's id (answered for an alias check; nil in older answers).
        public var conversationId: UUID?

        public init(kind: ChatEvents.Conversation.Kind, workspaceId: UUID?, conversationId: UUID? = nil) {
            self.kind = kind
            self.workspaceId = workspaceId
            self.conversationId = conversationId
        }

        /// The 204's headers.
        public var headerFields: HTTPFields {
            var fields = HTTPFields()
            fields[ChatInternal.ReaderCheck.kindHeader] = kind.rawValue
            if let workspaceId { fields[ChatInternal.ReaderCheck.workspaceHeader] = workspaceId.lowercased }
            if let conversationId { fields[ChatInternal.ReaderCheck.idHeader] = conversationId.lowercased }
            return fields
        }

        /// Reads the 204's headers through `header` (a lookup in whichever header type the HTTP
        /// client has); a missing or unknown kind reads as a channel.
        public init(header: (HTTPField.Name) -> String?) {
            kind = header(ChatInternal.ReaderCheck.kindHeader).flatMap(ChatEvents.Conversation.Kind.init) ?? .channel
            workspaceId = header(ChatInternal.ReaderCheck.workspaceHeader).flatMap(UUID.init(uuidString:))
            conversationId = header(ChatInternal.ReaderCheck.idHeader).flatMap(UUID.init(uuidString:))
        }
    }
}
