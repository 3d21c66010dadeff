/// A destination string understood by the gateway: a subscription topic or a send target.
///
/// Matching is done on exact UTF-8 bytes (no Unicode normalisation, no
/// case folding, no percent-decoding). Identifiers are 1–64 characters of
/// `[A-Za-z0-9-]`; the server parses them as UUIDs or integers afterwards.
enum StompDestination: Sendable, Hashable {
    case topic(StompTopic)
    case send(StompSend)

    /// Maximum length of an identifier segment.
    static let maxIdentifierLength = 64

    /// Parses either kind of destination; `nil` if it is neither.
    init?(_ destination: String) {
        if let topic = StompTopic(destination: destination) {
            self = .topic(topic)
        } else if let send = StompSend(destination: destination) {
            self = .send(send)
        } else {
            return nil
        }
    }

    /// The canonical destination string.
    var destination: String {
        switch self {
        case .topic(let topic): topic.destination
        case .send(let send): send.destination
        }
    }

    /// `true` if `text` is 1–64 ASCII letters, digits or `-`.
    static func isValidIdentifier(_ text: String) -> Bool {
        identifier(text.utf8[...]) != nil
    }

    /// The bytes after `prefix`, if `destination` starts with it.
    fileprivate static func remainder(of destination: String, after prefix: String) -> ArraySlice<UInt8>? {
        let bytes = Array(destination.utf8)
        guard bytes.starts(with: prefix.utf8) else { return nil }
        return bytes[prefix.utf8.count...]
    }

    /// Validates an identifier segment and returns it as a `String`.
    fileprivate static func identifier<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        guard !bytes.isEmpty, bytes.count <= maxIdentifierLength, bytes.allSatisfy(isIdentifierByte) else {
            return nil
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    fileprivate static func matches(_ bytes: ArraySlice<UInt8>, _ literal: String) -> Bool {
        bytes.elementsEqual(literal.utf8)
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}

/// A SUBSCRIBE destination.
enum StompTopic: Sendable, Hashable {
    /// `/topic/group/{id}`
    case group(String)
    /// `/topic/direct/{id}`
    case direct(String)
    /// `/topic/community/{id}`
    case community(String)
    /// `/topic/{id}`; the words `group`, `direct` and `community` are reserved
    /// and never parsed as a room id.
    case room(String)

    private static let prefix = "/topic/"
    private static let reservedRoomIdentifiers: Set<String> = ["group", "direct", "community"]

    /// Parses a topic destination; `nil` for anything else.
    init?(destination: String) {
        guard let rest = StompDestination.remainder(of: destination, after: Self.prefix) else { return nil }
        let segments = rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        switch segments.count {
        case 1:
            guard let id = StompDestination.identifier(segments[0]),
                !Self.reservedRoomIdentifiers.contains(id)
            else { return nil }
            self = .room(id)
        case 2:
            guard let id = StompDestination.identifier(segments[1]) else { return nil }
            let kind = segments[0]
            if StompDestination.matches(kind, "group") {
                self = .group(id)
            } else if StompDestination.matches(kind, "direct") {
                self = .direct(id)
            } else if StompDestination.matches(kind, "community") {
                self = .community(id)
            } else {
                return nil
            }
        default:
            return nil
        }
    }

    /// The identifier carried by the topic.
    var id: String {
        switch self {
        case .group(let id), .direct(let id), .community(let id), .room(let id): id
        }
    }

    /// The canonical destination string, e.g. `/topic/group/42`.
    var destination: String {
        switch self {
        case .group(let id): "\(Self.prefix)group/\(id)"
        case .direct(let id): "\(Self.prefix)direct/\(id)"
        case .community(let id): "\(Self.prefix)community/\(id)"
        case .room(let id): "\(Self.prefix)\(id)"
        }
    }
}

/// Which kind of conversation a send targets.
enum StompConversationKind: String, Sendable, Hashable, CaseIterable {
    case channel
    case direct
}

/// A SEND destination under `/kafka/`.
enum StompSend: Sendable, Hashable {
    /// `/kafka/send-{channel|direct}-message`
    case message(StompConversationKind)
    /// `/kafka/send-{channel|direct}-modify`
    case modify(StompConversationKind)
    /// `/kafka/send-{channel|direct}-delete`
    case delete(StompConversationKind)
    /// `/kafka/send-{channel|direct}-typing`
    case typing(StompConversationKind)
    /// `/kafka/send-{channel|direct}-reply`
    case reply(StompConversationKind)
    /// `/kafka/join-channel`
    case joinChannel
    /// `/kafka/community-signaling`
    case communitySignaling

    private static let prefix = "/kafka/"

    private enum Action: String, CaseIterable {
        case message, modify, delete, typing, reply
    }

    /// Parses a send destination; `nil` for anything else.
    init?(destination: String) {
        guard let rest = StompDestination.remainder(of: destination, after: Self.prefix) else { return nil }
        if StompDestination.matches(rest, "join-channel") {
            self = .joinChannel
            return
        }
        if StompDestination.matches(rest, "community-signaling") {
            self = .communitySignaling
            return
        }
        let parts = rest.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3, StompDestination.matches(parts[0], "send"),
            let kind = StompConversationKind.allCases.first(where: { StompDestination.matches(parts[1], $0.rawValue) }),
            let action = Action.allCases.first(where: { StompDestination.matches(parts[2], $0.rawValue) })
        else { return nil }
        switch action {
        case .message: self = .message(kind)
        case .modify: self = .modify(kind)
        case .delete: self = .delete(kind)
        case .typing: self = .typing(kind)
        case .reply: self = .reply(kind)
        }
    }

    /// The conversation kind, or `nil` for `joinChannel` / `communitySignaling`.
    var kind: StompConversationKind? {
        switch self {
        case .message(let kind), .modify(let kind), .delete(let kind), .typing(let kind), .reply(let kind): kind
        case .joinChannel, .communitySignaling: nil
        }
    }

    /// The canonical destination string, e.g. `/kafka/send-channel-message`.
    var destination: String {
        switch self {
        case .message(let kind): "\(Self.prefix)send-\(kind.rawValue)-message"
        case .modify(let kind): "\(Self.prefix)send-\(kind.rawValue)-modify"
        case .delete(let kind): "\(Self.prefix)send-\(kind.rawValue)-delete"
        case .typing(let kind): "\(Self.prefix)send-\(kind.rawValue)-typing"
        case .reply(let kind): "\(Self.prefix)send-\(kind.rawValue)-reply"
        case .joinChannel: "\(Self.prefix)join-channel"
        case .communitySignaling: "\(Self.prefix)community-signaling"
        }
    }
}
