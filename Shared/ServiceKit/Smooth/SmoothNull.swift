/// A Smooth answer's key that is always present: `null` when there is no value. Smooth's Spring
/// servers wrote every field (Jackson's default), and its iOS models decode some of them as
/// required-but-nullable; Swift's synthesised `Encodable` omits a nil optional, this does not.
///
///     struct SmoothCommunity: Encodable { var id: Int64; @SmoothNull var icon: String? }
@propertyWrapper
public struct SmoothNull<Value: Encodable & Sendable>: Encodable, Sendable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
