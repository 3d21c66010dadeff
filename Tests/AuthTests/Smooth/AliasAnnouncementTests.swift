import Foundation
import Logging
import PostgresNIO
import SuiteTesting
import Testing

@testable import AuthApp

/// Users from before integer aliases get one `UserProfileUpdated` with their alias and tag.
@Suite("Aliases of existing users are announced", .serialized)
struct AliasAnnouncementTests {
    @Test("users created now count as announced; a pending one gets one profile event with alias and code, once")
    func announce() async throws {
        try await Stack.run(services: [.auth]) { s in
            let db = try #require(s.databases["auth"])
            let user = try await s.join(nickname: "legacy")
            let id = try #require(UUID(uuidString: user.user_id))
            for try await pending in try await db.query("SELECT count(*) FROM users WHERE NOT alias_announced").decode(Int64.self) {
                #expect(pending == 0, "the join's UserRegistered carried the alias")
            }
            // As if the user predated aliases.
            _ = try await db.query("UPDATE users SET alias_announced = false WHERE id = \(id)")
            var alias: Int64 = 0
            var code = ""
            for try await (a, c) in try await db.query("SELECT alias, user_code FROM users WHERE id = \(id)").decode((Int64, String).self) {
                (alias, code) = (a, c)
            }
            let logger = Logger(label: "test")
            let announcement = AliasAnnouncement(postgres: db, store: UserStore(postgres: db, logger: logger), logger: logger)
            #expect(try await announcement.announcePending() == 1)
            #expect(try await announcement.announcePending() == 0)
            let events = try await SmoothAuth.events(s, type: "auth.user.profile-updated", alias: Int(alias))
            #expect(events.count == 1)
            #expect((events.first?["alias"] as? NSNumber)?.int64Value == alias && events.first?["code"] as? String == code)
            #expect(events.first?["nickname"] as? String == "legacy")
        }
    }
}
