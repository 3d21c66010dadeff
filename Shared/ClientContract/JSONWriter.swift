import Events
import HTTPTypes
import Hummingbird
import NIOCore

/// A value that writes itself with `JSONWriter`.
public protocol JSONWritable: Sendable {
    func write(to json: inout JSONWriter)
}

extension JSONWritable {
    /// The value as JSON bytes.
    public var jsonBuffer: ByteBuffer {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.buffer
    }
}

/// An answer written with `JSONWriter`: one value, or a bare top-level array of them.
public struct JSONResponse: ResponseGenerator, Sendable {
    let body: ByteBuffer

    public init(_ value: some JSONWritable) { body = value.jsonBuffer }

    public init<Element: JSONWritable>(array: [Element]) {
        var writer = JSONWriter(capacity: 256 + array.count * 320)
        writer.beginArray()
        for element in array { element.write(to: &writer) }
        writer.endArray()
        body = writer.buffer
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}

extension MemberSummary: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("user_id", user_id)
        json.member("email", email)
        json.member("nickname", nickname)
        json.member("profileImage", profileImage)
        json.endObject()
    }
}

/// A reaction as messages and the reactions routes show it (`{emoji, count, users}`).
extension ChatEvents.Reaction: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("emoji", emoji)
        json.member("count", count)
        json.member("users", ids: users)
        json.endObject()
    }
}
