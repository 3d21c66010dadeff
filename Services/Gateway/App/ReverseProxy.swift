import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Kafka
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// Streams a request to a service and its response back (no whole-body buffering either way).
struct ReverseProxy: Sendable {
    let client: HTTPClient
    let timeout: TimeAmount

    /// Hop-by-hop headers (RFC 9110 §7.6.1): never forwarded in either direction.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]
    /// Request headers the proxy sets itself (host from the upstream URL, length from the body,
    /// X-Forwarded-For: the client address the edge resolved, not what the client claimed).
    static let replacedOnRequest: Set<String> = ["host", "content-length", "x-forwarded-for"]
    /// Bodies (request and answer) up to this size are read whole before forwarding; larger ones stream.
    static let bufferedBodyLimit = 256 * 1024

    /// Forwards `request` to `base`; `bodyLimit` bounds a streamed body (a chunked one has no
    /// length the edge could check up front).
    /// - Parameters:
    ///   - path: the upstream path (default: the request's own).
    ///   - publicURL: sent as `X-Chatsuite-Public-URL` (legacy answers that name the server).
    ///   - smoothPrefixes: sent as `X-Chatsuite-Smooth-Prefixes` (Smooth's absolute URLs).
    func forward(
        _ request: Request, to base: String, path: String? = nil, userId: String?, requestId: String, clientAddress: String, bodyLimit: Int,
        publicURL: String? = nil, smoothPrefixes: String? = nil
    ) async throws -> Response {
        var query = ""
        if let q = request.uri.query, !q.isEmpty { query = "?" + q }
        var upstream = HTTPClientRequest(url: base + (path ?? request.uri.path) + query)
        upstream.method = HTTPMethod(rawValue: request.method.rawValue)
        // With tracing on, AsyncHTTPClient's client span puts the edge's trace context on the
        // request (continuing the client's `traceparent`, if any), so the client's own headers are
        // not passed as well; without tracing they pass unchanged.
        let trace = KafkaTracing.values()
        for field in request.headers {
            let name = field.name.canonicalName
            if Self.hopByHop.contains(name) || Self.replacedOnRequest.contains(name) || GatewayHeader.reserved.contains(field.name)
                || name == GatewayHeader.requestId.canonicalName || (!trace.isEmpty && trace[name] != nil)
            {
                continue
            }
            upstream.headers.add(name: field.name.rawName, value: field.value)
        }
        if let userId { upstream.headers.add(name: GatewayHeader.userId.rawName, value: userId) }
        if let publicURL { upstream.headers.add(name: GatewayHeader.publicURL.rawName, value: publicURL) }
        if let smoothPrefixes { upstream.headers.add(name: GatewayHeader.smoothPrefixes.rawName, value: smoothPrefixes) }
        upstream.headers.add(name: GatewayHeader.requestId.rawName, value: requestId)
        upstream.headers.add(name: "X-Forwarded-For", value: clientAddress)
        var upload: UploadBody?
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            if length > 0 && length <= Int64(Self.bufferedBodyLimit) {
                // Small bodies (JSON, forms) go upstream in one piece: cheaper than a stream, and
                // a service that answers before reading the body (a bad id in the path) cannot
                // race the upload and cut the response short.
                upstream.body = .bytes(try await request.body.collect(upTo: Int(length)))
            } else if length > 0 {
                // Sent chunked, not with its length: when a service answers a large upload early
                // (a refusal before reading it), AsyncHTTPClient ends the upload short and, with a
                // declared length, fails the whole request (`bodyLengthMismatch`) before the
                // answer reaches us. The gateway has already checked the length against its limit.
                upload = UploadBody(request.body, limit: bodyLimit)
            }
        } else if request.headers[.transferEncoding] != nil {
            upload = UploadBody(request.body, limit: bodyLimit)
        }
        if let upload { upstream.body = .stream(upload, length: .unknown) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(upstream, timeout: timeout)
        } catch {
            await upload?.release()
            if upload?.exceededLimit == true { throw APIError.bodyTooLarge(limit: bodyLimit) }
            throw APIError.dependencyUnavailable("upstream \(base) failed: \(error)")
        }
        // The answer is here; the upload must not read the client's body any more (UploadBody).
        await upload?.release()
        if upload?.exceededLimit == true { throw APIError.bodyTooLarge(limit: bodyLimit) }
        var headers = HTTPFields()
        for (name, value) in response.headers where !Self.hopByHop.contains(name.lowercased()) {
            if let fieldName = HTTPField.Name(name) { headers.append(HTTPField(name: fieldName, value: value)) }
        }
        let status = HTTPResponse.Status(code: Int(response.status.code))
        // Small answers (JSON) are read whole and written in one piece; large ones (files) stream.
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length <= Self.bufferedBodyLimit {
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: length)
            } catch {
                throw APIError.dependencyUnavailable("upstream \(base) failed mid-answer: \(error)")
            }
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
        }
        return Response(status: status, headers: headers, body: ResponseBody(asyncSequence: response.body))
    }
}
