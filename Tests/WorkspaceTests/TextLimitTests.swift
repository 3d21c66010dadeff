import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// Names, descriptions and search keywords are bounded in UTF-8 bytes as well as in characters.
@Suite("Byte limits on workspace texts")
struct WorkspaceTextLimitTests {
    /// `base` followed by `marks` combining acute accents (2 bytes each): one character.
    static func accented(_ base: String, _ marks: Int) -> String {
        base + String(repeating: "\u{0301}", count: marks)
    }

    @Test("workspace, channel and category names (120 bytes), descriptions (2 000 bytes), search keywords (400 bytes): over is E11")
    func workspaceTexts() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let longName = Self.accented("a", 60)  // 121 bytes, one character
            let longDescription = Self.accented("d", 1_000)  // 2 001 bytes, one character

            // Workspaces (multipart, as WSX sends them).
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": longName])) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": "ok", "description": longDescription])) == "400 E11")
            // At the limits: 30 Hangul syllables (90 bytes), 119 bytes of one character, 500 syllables.
            let workspace = try await s.createWorkspace(owner, name: String(repeating: "가", count: 30), description: String(repeating: "나", count: 500))
            let wid = id(workspace, "workspace_id")
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": Self.accented("b", 59)])) == "200")
            #expect(outcome(try await s.multipartRequest(.put, "/v1/workspaces/\(wid)", owner, fields: ["name": longName])) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.put, "/v1/workspaces/\(wid)", owner, fields: ["description": longDescription])) == "400 E11")

            // Channels (JSON, as AMOR sends them, and multipart).
            let channels = "/v1/workspaces/\(wid)/channels"
            #expect(outcome(try await s.send(.post, channels, owner, json: #"{"name":"\#(longName)","description":"about"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, channels, owner, json: #"{"name":"c1","description":"\#(longDescription)"}"#)) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.post, channels, owner, fields: ["name": longName])) == "400 E11")
            let channel = id(try await s.createChannel(owner, in: wid), "channel_id")
            #expect(outcome(try await s.multipartRequest(.put, "\(channels)/\(channel)", owner, fields: ["name": longName])) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.put, "\(channels)/\(channel)", owner, fields: ["description": longDescription])) == "400 E11")

            // Categories.
            let categories = "/v1/workspaces/\(wid)/categories"
            #expect(outcome(try await s.send(.post, categories, owner, json: #"{"name":"\#(longName)"}"#)) == "400 E11")
            let category = id(jsonObject(try await s.send(.post, categories, owner, json: #"{"name":"묶음"}"#)), "category_id")
            #expect(outcome(try await s.send(.put, "\(categories)/\(category)", owner, json: #"{"name":"\#(longName)"}"#)) == "400 E11")

            // Search keywords: 100 characters, 400 bytes.
            let keyword = Self.accented("가", 199)  // 401 bytes
            let search = "/v1/workspaces/\(wid)/search?keyword="
            #expect(outcome(try await s.get(search + (keyword.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""), owner)) == "400 E11")
            #expect(
                outcome(try await s.get(search + (Self.accented("가", 198).addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""), owner))
                    == "200")

            // Nothing of the refused requests was stored.
            let db = try #require(s.workspaceDatabase)
            var longest = 0
            for try await bytes in try await db.query(
                """
                SELECT max(octet_length(name)) FROM (
                    SELECT name FROM workspaces UNION ALL SELECT name FROM channels UNION ALL SELECT name FROM categories) names
                """
            ).decode(Int.self) { longest = bytes }
            #expect(longest <= 120)
        }
    }
}
