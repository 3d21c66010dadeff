import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

@Suite("Read cursors and message search")
struct ReadAndSearchTests {
    typealias Place = MessageChangeTests.Place

    func send(_ s: Stack, _ place: Place, _ user: User, _ content: String) async throws -> [String: Any] {
        let response = try await s.send(.post, place.chats, user, json: #"{"content":"\#(content)"}"#)
        #expect(response.status == .ok, "send: \(String(buffer: response.body))")
        return try #require(jsonObject(response))
    }

    @Test("read cursors: move forward only, default to the newest message, count others' messages after them; the workspace summary; chat.read.v1")
    func readCursors() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let outsider = try await s.user()
            let place = try await MessageChangeTests.channel(s, owner, [member])
            let dm = try await MessageChangeTests.dm(s, owner, member, in: place)
            let summaryURL = "/v1/workspaces/\(place.workspace)/unreads"

            var sent: [[String: Any]] = []
            for i in 0..<4 { sent.append(try await send(s, place, i == 3 ? owner : member, "m\(i)")) }
            _ = try await send(s, dm, member, "dm")
            let before = try #require(jsonObject(try await s.get(summaryURL, owner)))
            let channels = try #require(before["channels"] as? [[String: Any]])
            #expect(channels.count == 1 && channels[0]["count"] as? Int == 3 && channels[0]["readAt"] == nil && channels[0]["name"] as? String == "일반")
            #expect((before["dms"] as? [[String: Any]])?.first?["count"] as? Int == 1)

            // Read up to the second message: one of the member's remains (the 4th is the owner's own).
            let cursor = try #require(sent[1]["createdAt"] as? String)
            let moved = try await s.send(.put, place.prefix + "/read", owner, json: #"{"cursor_date":"\#(cursor)"}"#)
            #expect(moved.status == .ok, "\(String(buffer: moved.body))")
            try expectContractDates(moved)
            let state = try #require(jsonObject(moved))
            #expect(state["readAt"] as? String == cursor && state["count"] as? Int == 1)
            // An older cursor never moves it back.
            let older = try #require(
                jsonObject(try await s.send(.put, place.prefix + "/read", owner, json: #"{"cursor_date":"\#(sent[0]["createdAt"] as? String ?? "")"}"#)))
            #expect(older["readAt"] as? String == cursor && older["count"] as? Int == 1)
            // No cursor: everything up to the newest message.
            let all = try #require(jsonObject(try await s.send(.put, place.prefix + "/read", owner, json: "{}")))
            #expect(all["readAt"] as? String == sent[3]["createdAt"] as? String && all["count"] as? Int == 0)
            let dmRead = try #require(jsonObject(try await s.request(.put, dm.prefix + "/read", token: owner.token)))
            #expect(dmRead["room_id"] as? String != nil && dmRead["count"] as? Int == 0)
            let after = try #require(jsonObject(try await s.get(summaryURL, owner)))
            #expect((after["channels"] as? [[String: Any]])?.first?["count"] as? Int == 0)
            #expect((after["dms"] as? [[String: Any]])?.first?["count"] as? Int == 0)

            #expect(outcome(try await s.send(.put, place.prefix + "/read", owner, json: #"{"cursor_date":"yesterday"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, place.prefix + "/read", outsider, json: "{}")) == "400 E13")
            #expect(outcome(try await s.get(summaryURL, outsider)) == "400 E13")

            // chat.read.v1: three moves (the older cursor moved nothing), keyed by the reader.
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "analytics-read", topics: [Topic.chatRead.name])
            let events = try await withTimeout(.seconds(20), "chat.read.v1") {
                var seen: [(key: String, event: CloudEvent<ChatEvents.ReadCursorMoved>)] = []
                for try await message in consumer.messages {
                    seen.append((message.keyString ?? "", try EventCoding.decode(ChatEvents.ReadCursorMoved.self, from: message.value ?? [])))
                    if seen.count == 3 { break }
                }
                return seen
            }
            await consumer.close()
            #expect(events.allSatisfy { $0.key == owner.id.lowercased() })
            #expect(events.map { Timestamp.format($0.event.data.readAt) }.prefix(2) == [cursor, sent[3]["createdAt"] as? String ?? ""])
            #expect(events[2].event.data.conversation.kind == .dm)

            // A deleted channel takes its read cursors with it (nothing left behind in chat).
            let side = id(try await s.createChannel(owner, in: place.workspace, name: "잠깐"), "channel_id")
            try await s.waitForChatMember(owner.id, channel: side)
            let sidePrefix = "/v1/workspaces/\(place.workspace)/channels/\(side)"
            #expect(try await s.send(.put, sidePrefix + "/read", owner, json: "{}").status == .ok)
            let db = try #require(s.chatDatabase)
            let sideId = try #require(UUID(uuidString: side))
            func cursorRows() async throws -> Int {
                for try await count in try await db.query("SELECT count(*)::int FROM read_cursors WHERE conversation_id = \(sideId)").decode(Int.self) {
                    return count
                }
                return 0
            }
            #expect(try await cursorRows() == 1)
            #expect(try await s.request(.delete, sidePrefix, token: owner.token).status == .ok)
            try await s.waitForChatMember(owner.id, channel: side, present: false)
            #expect(try await cursorRows() == 0)
        }
    }

    @Test("search: Korean partial words, newest first, only the caller's channels and DMs, literal % and _, E11 / E13")
    func search() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let third = try await s.user("셋째")
            let place = try await MessageChangeTests.channel(s, owner, [member, third])
            let wid = place.workspace
            let secret = id(try await s.createChannel(owner, in: wid, name: "비밀"), "channel_id")
            try await s.waitForChatMember(owner.id, channel: secret)
            let secretPlace = Place(workspace: wid, prefix: "/v1/workspaces/\(wid)/channels/\(secret)")
            _ = try await send(s, place, owner, "오늘 공지사항 확인하세요")
            _ = try await send(s, place, member, "공지 읽었습니다")
            _ = try await send(s, place, member, "점심 메뉴")
            _ = try await send(s, secretPlace, owner, "비밀 공지")
            _ = try await send(s, place, owner, "100% 확실_함")
            let dm = try await MessageChangeTests.dm(s, owner, member, in: place)
            _ = try await send(s, dm, owner, "DM 공지")
            let otherDM = try await MessageChangeTests.dm(s, owner, third, in: place)
            _ = try await send(s, otherDM, owner, "셋째에게 공지")

            func search(_ user: User, _ keyword: String, limit: Int? = nil) async throws -> TestResponse {
                var url = "/v1/workspaces/\(wid)/chats/search?keyword=\(keyword.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? keyword)"
                if let limit { url += "&limit=\(limit)" }
                return try await s.get(url, user)
            }
            let found = try #require(jsonObject(try await search(member, "공지")))
            let channelHits = try #require(found["channelChats"] as? [[String: Any]])
            #expect(channelHits.map { $0["content"] as? String } == ["공지 읽었습니다", "오늘 공지사항 확인하세요"], "newest first, no secret channel")
            #expect(Set(try #require(channelHits.first).keys) == ["channel_id", "channelName", "chat_id", "content", "createdAt", "files", "user"])
            #expect((found["dmChats"] as? [[String: Any]])?.map { $0["content"] as? String } == ["DM 공지"], "only the caller's rooms")
            let ownerHits = try #require(jsonObject(try await search(owner, "공지")))
            #expect((ownerHits["channelChats"] as? [[String: Any]])?.count == 3 && (ownerHits["dmChats"] as? [[String: Any]])?.count == 2)
            #expect((jsonObject(try await search(owner, "공지", limit: 1))?["channelChats"] as? [[String: Any]])?.count == 1)
            #expect((jsonObject(try await search(owner, "사항"))?["channelChats"] as? [[String: Any]])?.count == 1)
            #expect((jsonObject(try await search(owner, "0% 확"))?["channelChats"] as? [[String: Any]])?.count == 1)
            #expect((jsonObject(try await search(owner, "%"))?["channelChats"] as? [[String: Any]])?.count == 1, "% is literal")
            #expect((jsonObject(try await search(owner, "_"))?["channelChats"] as? [[String: Any]])?.count == 1, "_ is literal")
            #expect(outcome(try await search(owner, "")) == "400 E11")
            #expect(outcome(try await search(owner, "공지", limit: 0)) == "400 E11")
            #expect(outcome(try await search(owner, "공지", limit: 101)) == "400 E11")
            let outsider = try await s.user()
            #expect(outcome(try await search(outsider, "공지")) == "400 E13")
        }
    }
}
