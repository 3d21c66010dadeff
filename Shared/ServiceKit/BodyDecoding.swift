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
            return try SuiteJSON.decoder().decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw APIError.badRequest("undecodable body: \(error)")
        }
    }
}
