import Events
import Foundation
import NIOCore
import Synchronization

/// One event of the delivery stream (`gateway.delivery.v1`), decoded once by the
/// `DeliveryConsumer` and routed by the `RealtimeHub` to the protocols' subscribers.
enum LiveEvent: Sendable {
    case channelMessage(ChatEvents.ChannelMessageCreated)
    case directMessage(ChatEvents.DirectMessageCreated)
    case edited(ChatEvents.MessageEdited)
    case deleted(ChatEvents.MessageDeleted)
    case reactions(ChatEvents.ReactionsChanged)
    case typing(GatewayEvents.TypingStarted)
    /// Goes to the user's own sessions only (their other devices follow the cursor).
    case readCursor(ChatEvents.ReadCursorMoved)
    /// Goes to the sessions sharing one of the member's workspaces (never the member's own) that
    /// take presence one change at a time (STOMP).
    case presence(PresenceEvents.StatusChanged)
    /// A workspace's presence changes of one batching window (`PresenceBatcher`), to the sessions
    /// that take presence in batches (native), never about their own user.
    case presenceBatch(PresenceBatch)
    /// A STOMP client's `/kafka/community-signaling`, to the community's subscribers.
    case signal(GatewayEvents.CommunitySignal)
    /// A study chat, to the Socket.IO sessions that announced its recipient (`changesocketid`).
    case studyChat(StudyEvents.ChatSent)

    /// Who receives the event.
    enum Route: Sendable {
        /// The followers of a conversation (or of a workspace, for `.signal`).
        case followers(UUID)
        /// The subscribers with a follow in any of these workspaces.
        case workspaces([UUID])
    }

    var route: Route {
        switch self {
        case .channelMessage(let event): .followers(event.channelId.uuid)
        case .directMessage(let event): .followers(event.roomId.uuid)
        case .edited(let event): .followers(event.conversation.id)
        case .deleted(let event): .followers(event.conversation.id)
        case .reactions(let event): .followers(event.conversation.id)
        case .typing(let event): .followers(event.conversationId)
        case .readCursor(let event): .followers(event.conversation.id)
        case .presence(let event): .workspaces(event.workspaceIds.map(\.uuid))
        case .presenceBatch(let batch): .workspaces([batch.workspaceId])
        case .signal(let event): .followers(event.communityId)
        case .studyChat(let event): .followers(StudyEvents.liveRoute(of: event.to))
        }
    }

    /// Whether a follow by `user` receives the event: typing and presence skip their author
    /// (an anonymous follow, `user` nil, gets them; a batch only about `user` is skipped, one that
    /// also names others is filtered by the session), a read cursor goes to its owner only.
    func reaches(_ user: UserID?) -> Bool {
        switch self {
        case .typing(let event): user != event.userId
        case .presence(let event): user != event.userId
        case .presenceBatch(let batch): user.map { !batch.isOnly($0) } ?? true
        case .readCursor(let event): user == event.userId
        default: true
        }
    }

    /// The native dispatch type and the Socket.IO event name of the event (docs/native-gateway.md,
    /// docs/realtime.md): messages keep their contract names, the rest share one vocabulary.
    var dispatchType: String {
        switch self {
        case .channelMessage: "channel.message"
        case .directMessage: "dm.message"
        case .edited: "message.edited"
        case .deleted: "message.deleted"
        case .reactions: "message.reactions"
        case .typing: "typing"
        case .readCursor: "read.cursor"
        case .presence: "presence.update"
        case .presenceBatch: "presence.batch"
        case .signal: "community.signal"
        case .studyChat: "chat"
        }
    }

    /// Whether the event is a created message with attachments (whose STOMP frame links them).
    var carriesFiles: Bool {
        switch self {
        case .channelMessage(let event): !event.files.isEmpty
        case .directMessage(let event): !event.files.isEmpty
        default: false
        }
    }

    /// The message a created message or a change is about (resume marks and replays use it).
    var createdMessage: (id: UUID, createdAt: Date)? {
        switch self {
        case .channelMessage(let event): (event.messageId.uuid, event.createdAt)
        case .directMessage(let event): (event.messageId.uuid, event.createdAt)
        default: nil
        }
    }
}

/// An event on its way to its recipients, with what each protocol rendered from it: every
/// recipient of one protocol shares the same bytes (a message is encoded once, not per socket).
final class LiveDelivery: Sendable {
    /// What a rendering is for: a protocol's format, and the target it depends on (a Socket.IO
    /// packet names its namespace; a STOMP body does not). Cheap to hash: looked up per recipient.
    struct RenderingKey: Hashable, Sendable {
        enum Format: Hashable, Sendable { case socketIO, socketIOGenerationA, stomp }
        var format: Format
        var target: UUID?
        /// Where the rendering links attachments (STOMP: URLs name the host the client reached).
        var fileBase: String?
    }

    let event: LiveEvent
    private let rendered = Mutex<[RenderingKey: OutboundText]>([:])
    private let json = Mutex<ByteBuffer?>(nil)

    init(_ event: LiveEvent) {
        self.event = event
    }

    /// The protocol-neutral JSON payload (the native dispatch's `d`, the Socket.IO event's
    /// argument), written once.
    var payload: ByteBuffer {
        json.withLock { json in
            if let json { return json }
            let written = LivePayloads.json(of: event)
            json = written
            return written
        }
    }

    /// What `key`'s protocol made of the event for every recipient sharing `key` (say, one
    /// Socket.IO namespace), made once.
    func rendering(_ key: RenderingKey, _ make: (LiveDelivery) -> OutboundText) -> OutboundText {
        if let done = rendered.withLock({ $0[key] }) { return done }
        let made = make(self)
        return rendered.withLock { rendered in
            if let done = rendered[key] { return done }
            rendered[key] = made
            return made
        }
    }
}
