import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// `GET /v1/workspaces/{w}/chats/search?keyword=&limit=` (additive): messages containing the
/// keyword in the channels the caller is in and in their DM rooms, newest first —
/// `{channelChats: [ChannelChat], dmChats: [DMChat]}`, each at most `limit` (default 50, at most
/// 100). E11 for an empty keyword or a bad limit, E13 for a non-member.
extension ChatAPI {
    struct SearchResponse: JSONWritable {
        var channelChats: [ChannelChatResponse]
        var dmChats: [DMChatResponse]

        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("channelChats")
            json.beginArray()
            for chat in channelChats { chat.write(to: &json) }
            json.endArray()
            json.key("dmChats")
            json.beginArray()
            for chat in dmChats { chat.write(to: &json) }
            json.endArray()
            json.endObject()
        }
    }

    static let maxSearchResults = 100

    /// Mounted at `/v1/workspaces/{w}`.
    var searchRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("chats/search") { request, context -> JSONResponse in
            let me = context.identity
            let workspace: WorkspaceID = try pathID(context, "workspace")
            let keyword = (request.uri.queryParameters.get("keyword") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !keyword.isEmpty, TextLimit.searchKeyword.allows(keyword) else {
                throw APIError.badRequest("keyword must be 1 to 100 characters (400 bytes)")
            }
            var limit = 50
            if let text = request.uri.queryParameters.get("limit") {
                guard let value = Int(text), (1...Self.maxSearchResults).contains(value) else { throw APIError.badRequest("limit must be 1 to 100") }
                limit = value
            }
            return try await postgres.withLiveConnection { [limit] c in
                guard try await rooms.isWorkspaceMember(me, of: workspace, c) else { throw APIError.notFound("workspace") }
                let channelHits = try await messages.searchChannels(keyword, reader: me, in: workspace, limit: limit, c)
                let myRooms = try await rooms.rooms(of: me, in: workspace, c)
                let roomHits = try await messages.searchRooms(keyword, limit: limit, in: myRooms, c)
                return JSONResponse(
                    SearchResponse(
                        channelChats: channelHits.map { ChannelChatResponse($0.message, in: $0.channel) },
                        dmChats: roomHits.map { DMChatResponse($0.message, in: $0.room) }
                    ))
            }
        }
        return routes
    }
}
