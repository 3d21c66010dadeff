import Foundation

/// A typed id: a UUID that cannot be mixed up with another entity's id, encoded lower-case (the
/// form clients and analytics see) and decoded in any case.
public struct Identifier<Entity>: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// A new time-ordered (v7) id.
    public static func generate() -> Self { Self(UUIDv7.generate()) }

    public init?(_ string: String) {
        guard let uuid = UUID(parsing: string) else { return nil }
        self.uuid = uuid
    }

    public var description: String { uuid.lowercased }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let uuid = UUID(parsing: string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a UUID")
        }
        self.uuid = uuid
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uuid.lowercased)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.uuid.lowercased < rhs.uuid.lowercased }
}

public enum UserEntity {}
public enum WorkspaceEntity {}
public enum ChannelEntity {}
public enum CategoryEntity {}
public enum CoinRequestEntity {}
public enum RoomEntity {}
public enum MessageEntity {}
public enum FriendshipEntity {}

public typealias UserID = Identifier<UserEntity>
public typealias WorkspaceID = Identifier<WorkspaceEntity>
public typealias ChannelID = Identifier<ChannelEntity>
public typealias CategoryID = Identifier<CategoryEntity>
/// A coin debit request of the workspace ↔ payment saga.
public typealias CoinRequestID = Identifier<CoinRequestEntity>
public typealias RoomID = Identifier<RoomEntity>
public typealias MessageID = Identifier<MessageEntity>
/// A friendship (Discord-style friends in auth); lower-case on the wire like every id.
public typealias FriendshipID = Identifier<FriendshipEntity>
