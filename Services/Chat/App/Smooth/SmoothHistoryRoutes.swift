import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Smooth's `/chat-server` history (client contract §2.1), mounted at `/smooth/chat`:
/// `GET community?ch_id=&page=&size=` pages a channel, `GET direct?ch_id=…` a DM room, by its
/// integer alias, newest page first,
/// oldest→newest within the page. Smooth's client sends no token here; the edge lets such reads
/// through while `gateway.smooth.anonymous-history` is on (channel aliases are random, not
/// enumerable). A request that does carry a user is held to membership.
extension ChatAPI {
    func addSmoothRoutes(to router: some RouterMethods<SuiteRequestContext>) {
        let smooth = router.group("smooth/chat").add(middleware: SmoothErrorMiddleware(surface: .authAndChat))
        smooth.get("community") { request, context -> SmoothResponse<[SmoothMessage]> in
            let query = request.uri.queryParameters
            guard let alias = query.get("ch_id").flatMap(IntegerAlias.parse) else { throw SmoothError.invalidInput }
            // Smooth's server: 50 a page unless asked (its iOS client asks for 20).
            guard let page = HistoryPage(page: query.get("page"), size: query.get("size"), defaultSize: 50) else { throw SmoothError.invalidInput }
            return SmoothResponse(
                try await postgres.withLiveConnection { c in
                    guard let channel = try await messages.channel(alias: alias, member: context.identity, c) else {
                        throw SmoothError.invalidChannel
                    }
                    return try await smoothPage(.channel(channel), page, SmoothFileLinks(request), c)
                })
        }
        // A DM room's history (a workspace room or a personal one) by the room's integer alias.
        smooth.get("direct") { request, context -> SmoothResponse<[SmoothMessage]> in
            let query = request.uri.queryParameters
            guard let alias = query.get("ch_id").flatMap(IntegerAlias.parse) else { throw SmoothError.invalidInput }
            guard let page = HistoryPage(page: query.get("page"), size: query.get("size"), defaultSize: 50) else { throw SmoothError.invalidInput }
            return SmoothResponse(
                try await postgres.withLiveConnection { c in
                    let room: RoomRef?
                    if let me = context.identity {
                        room = try await rooms.room(alias: alias, participant: me, lock: false, c)
                    } else {
                        room = try await rooms.room(alias: alias, c)
                    }
                    guard let room else { throw SmoothError.invalidChannel }
                    return try await smoothPage(.room(room), page, SmoothFileLinks(request), c)
                })
        }
        addSmoothFileRoutes(to: smooth)
    }

    private func smoothPage(_ conversation: Conversation, _ page: HistoryPage, _ links: SmoothFileLinks, _ c: PostgresConnection) async throws
        -> [SmoothMessage]
    {
        let stored = try await messages.page(conversation, page, c)
        let parents = try await messages.parents(Array(Set(stored.compactMap(\.parentId))), c)
        return stored.map { SmoothMessage($0, parent: $0.parentId.flatMap { parents[$0] }, links: links) }
    }
}
