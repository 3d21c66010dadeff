import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

extension Request {
    /// Decodes a body sent as JSON or as `application/x-www-form-urlencoded` (the contract's
    /// clients use both for the same endpoints). Anything unreadable is E11, never a 500.
    public func decodeBody<T: Decodable>(as type: T.Type, context: some RequestContext, limit: Int = 1 << 20) async throws -> T {
        let contentType = headers[.contentType]?.lowercased() ?? ""
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch {
            throw APIError.badRequest("body too large or unreadable")
        }
        do {
            if contentType.hasPrefix("application/x-www-form-urlencoded") {
                return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: buffer))
            }
            // No body at all reads as `{}`: every field absent, so optional-only bodies (e.g. an
            // invite with the defaults) need none, and required fields still fail validation (E11).
            return try SuiteJSON.decoder().decode(T.self, from: buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer: buffer))
        } catch {
            throw APIError.badRequest("undecodable body: \(error)")
        }
    }
}
