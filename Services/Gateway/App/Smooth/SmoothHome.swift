import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// Smooth's home screen, `GET /community-server/community`: `{rooms, communities}` where the
/// communities are workspace's and the rooms (personal rooms with unread messages) chat's. The
/// edge asks both at once and puts chat's list into workspace's answer. If chat cannot answer,
/// the communities still come, with `rooms: []` (a degraded home screen beats none; it is logged).
struct SmoothHome: Sendable {
    static let communitiesPath = "/smooth/community/community"
    static let unreadRoomsPath = "/smooth/community/room/unreceived"

    let client: HTTPClient
    let logger: Logger

    /// Whether this request is the home screen's.
    static func isHome(_ method: HTTPRequest.Method, _ path: String) -> Bool { method == .get && path == communitiesPath }

    /// Both answers, merged; workspace's refusal (or failure) as it is.
    func answer(workspaceBase: String, chatBase: String, headers: [(HTTPField.Name, String)]) async throws -> Response {
        async let rooms = get(chatBase + Self.unreadRoomsPath, headers)
        let (status, body) = try await get(workspaceBase + Self.communitiesPath, headers)
        let unread = try? await rooms
        guard status == .ok, var envelope = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any],
            var result = envelope["result"] as? [String: Any]
        else { return Self.json(status, body) }
        var list: [Any] = []
        if let unread, unread.status == .ok,
            let chatEnvelope = (try? JSONSerialization.jsonObject(with: Data(unread.body.readableBytesView))) as? [String: Any],
            let found = chatEnvelope["result"] as? [Any]
        {
            list = found
        } else {
            logger.warning("chat's unread rooms unavailable; the home screen shows none", metadata: ["http.status": "\(unread?.status.code ?? 0)"])
        }
        result["rooms"] = list
        envelope["result"] = result
        let merged = try JSONSerialization.data(withJSONObject: envelope, options: [.withoutEscapingSlashes])
        return Self.json(.ok, ByteBuffer(bytes: merged))
    }

    private func get(_ url: String, _ headers: [(HTTPField.Name, String)]) async throws -> (status: HTTPResponse.Status, body: ByteBuffer) {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name.rawName, value: value) }
        do {
            let answer = try await client.execute(request, timeout: .seconds(30))
            return (HTTPResponse.Status(code: Int(answer.status.code)), try await answer.body.collect(upTo: 4 << 20))
        } catch {
            throw APIError.dependencyUnavailable("upstream \(url) failed: \(error)")
        }
    }

    private static func json(_ status: HTTPResponse.Status, _ body: ByteBuffer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
