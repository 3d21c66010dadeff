import Events
import Foundation

/// Integer ids Gen A clients (Lilac) store records under, for records whose UUIDv7 no other API
/// names by alias (chats, billings): the low 53 bits of the UUID, which are random (so exact in a
/// `Double` too, and the same wherever computed: chat's answers and the gateway's deliveries need
/// no lookup). Two records share one with probability 2⁻⁵³ per pair (about 5·10⁻⁷ among the 10⁵
/// chats of one client); never 0.
public enum GenerationAID {
    public static func of(_ uuid: UUID) -> Int64 {
        let b = uuid.uuid
        var value: UInt64 = 0
        for byte in [b.9, b.10, b.11, b.12, b.13, b.14, b.15] { value = value << 8 | UInt64(byte) }
        let id = Int64(value & ((1 << 53) - 1))
        return id == 0 ? 1 : id
    }
}

extension Identifier where Entity == MessageEntity {
    /// The integer `chat_id` of Gen A's answers and deliveries.
    public var generationAChatID: Int64 { GenerationAID.of(uuid) }
}
