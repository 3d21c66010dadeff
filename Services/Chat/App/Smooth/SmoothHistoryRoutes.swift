import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Smooth's `/chat-server` history (client contract §2.1), mounted at `/smooth/chat`:
/// `GET community?ch_id=&page=&size=` pages a channel by its integer alias, newest page first,
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
                try await postgres.withConnection { c in
                    guard let channel = try await messages.channel(alias: alias, member: context.identity, c) else {
                        throw SmoothError.invalidChannel
                    }
                    let stored = try await messages.page(.channel(channel), page, c)
                    let parents = try await messages.parents(Array(Set(stored.compactMap(\.parentId))), c)
                    return stored.map { SmoothMessage($0, parent: $0.parentId.flatMap { parents[$0] }) }
                })
        }
    }
}
