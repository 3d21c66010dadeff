import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Message attachments")
struct AttachmentTests {
    func channel(_ s: Stack, _ owner: User, _ member: User) async throws -> (workspace: String, chats: String) {
        let wid = id(try await s.createWorkspace(owner), "workspace_id")
        try await s.invite(member, to: wid, by: owner)
        let channel = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        try await s.waitForChatMember(owner.id, channel: channel)
        try await s.waitForChatMember(member.id, channel: channel)
        return (wid, "/v1/workspaces/\(wid)/channels/\(channel)/chats")
    }

    func upload(
        _ s: Stack, _ uri: String, _ user: User, fields: [String: String] = [:],
        _ files: [(filename: String, contentType: String, bytes: [UInt8])]
    ) async throws -> TestResponse {
        let body = multipart(fields: fields, files: files)
        return try await s.client.execute(
            uri: uri, method: .post, headers: s.headers(token: user.token, contentType: body.contentType), body: body.body)
    }

    func storedFiles(_ s: Stack) throws -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: try #require(s.chatFilesDirectory))) ?? []
    }

    @Test("5 files of each kind (one exactly 5 MB, AMOR's image/jpg) are stored, listed and served with their types")
    func fiveFiles() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let (_, chats) = try await channel(s, owner, member)
            let big = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 5 * 1024 * 1024 - 4)
            let files: [(filename: String, contentType: String, bytes: [UInt8])] = [
                ("photo.jpg", "image/jpg", big), ("shot.png", "image/jpeg", pngBytes), ("문서.pdf", "application/pdf", pdfBytes),
                ("archive.zip", "application/zip", zipBytes), ("anim.gif", "application/octet-stream", Array("GIF89a".utf8) + [1, 2, 3]),
            ]
            let response = try await upload(s, chats, member, files)  // no content: files alone are a message
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let message = try #require(jsonObject(response))
            #expect(message["content"] == nil)
            let paths = try #require(message["files"] as? [String])
            #expect(paths.count == 5 && paths.allSatisfy { $0.hasPrefix("/static/channelChats/") })
            #expect(paths[2].hasSuffix("_문서.pdf"))
            let history = try #require(jsonArray(try await s.get(chats, owner)))
            #expect(history.first?["files"] as? [String] == paths)
            let types = ["image/jpeg", "image/png", "application/pdf", "application/zip", "image/gif"]
            for (i, path) in paths.enumerated() {
                let served = try await s.get("/v1" + path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!, owner)
                #expect(served.status == .ok, "\(path)")
                #expect(served.headers[.contentType] == types[i])
                #expect(Array(served.body.readableBytesView) == files[i].bytes)
            }
        }
    }

    @Test("refused and nothing left behind: a 6th file, 5 MB + 1 byte, an unknown kind, content that is not its kind")
    func refusals() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let (_, chats) = try await channel(s, owner, member)
            let before = try storedFiles(s)
            let six = (0..<6).map { (filename: "p\($0).png", contentType: "image/png", bytes: pngBytes) }
            #expect(outcome(try await upload(s, chats, owner, six)) == "400 E11")
            let tooBig = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 5 * 1024 * 1024 - 3)
            #expect(outcome(try await upload(s, chats, owner, [("ok.png", "image/png", pngBytes), ("big.jpg", "image/jpeg", tooBig)])) == "400 E11")
            #expect(outcome(try await upload(s, chats, owner, [("tool.exe", "application/octet-stream", zipBytes)])) == "400 E11")
            #expect(outcome(try await upload(s, chats, owner, [("fake.png", "image/png", Array("just text".utf8))])) == "400 E11")
            #expect(outcome(try await upload(s, chats, owner, fields: ["content": " "], [])) == "400 E11")
            #expect(try storedFiles(s) == before)
            #expect(try #require(jsonArray(try await s.get(chats, owner))).isEmpty)
        }
    }

    @Test("traversal names are neutralised; non-members, other rooms' users and made-up names get E13")
    func access() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let third = try await s.user()
            let outsider = try await s.user()
            let (wid, chats) = try await channel(s, owner, member)
            try await s.invite(third, to: wid, by: owner)
            let sent = try await upload(s, chats, owner, fields: ["content": "보세요"], [("../../../etc/passwd.png", "image/png", pngBytes)])
            #expect(sent.status == .ok, "\(String(buffer: sent.body))")
            let path = try #require((jsonObject(sent)?["files"] as? [String])?.first)
            let name = String(path.dropFirst("/static/channelChats/".count))
            #expect(!name.contains("/") && !name.contains("..") && name.hasSuffix("_etc_passwd.png"), "\(name)")
            #expect(try storedFiles(s).contains(name))
            #expect(try await s.get("/v1" + path, member).status == .ok)
            #expect(outcome(try await s.get("/v1" + path, outsider)) == "400 E13")
            #expect(outcome(try await s.get("/v1/static/channelChats/..%2F..%2Fetc%2Fpasswd", owner)) == "400 E13")
            #expect(outcome(try await s.get("/v1/static/channelChats/\(UUID().uuidString.lowercased())_x.png", owner)) == "400 E13")
            #expect(outcome(try await s.get("/v1" + path, nil)) == "401 E02")

            // A DM attachment: the pair only.
            try await s.waitForProfile(third.id)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", owner, json: #"{"opponent_id":"\#(member.id)"}"#)), "room_id")
            let dm = try await upload(s, "/v1/workspaces/\(wid)/dms/\(room)/chats", owner, [("note.pdf", "application/pdf", pdfBytes)])
            #expect(dm.status == .ok, "\(String(buffer: dm.body))")
            let dmPath = try #require((jsonObject(dm)?["files"] as? [String])?.first)
            #expect(dmPath.hasPrefix("/static/dmChats/"))
            #expect(try await s.get("/v1" + dmPath, member).status == .ok)
            #expect(outcome(try await s.get("/v1" + dmPath, third)) == "400 E13")
            // A stranger's upload is refused before anything is written.
            let before = try storedFiles(s)
            #expect(outcome(try await upload(s, chats, outsider, [("x.png", "image/png", pngBytes)])) == "400 E13")
            #expect(try storedFiles(s) == before)
        }
    }

    @Test("long file names keep their end within 100 characters and 200 bytes, are stored, and are served")
    func longFileNames() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let (_, chats) = try await channel(s, owner, member)
            // 90 Hangul syllables: 270 bytes (the stored name would pass the 255 bytes file systems
            // allow); 70 ASCII letters: a stored name over 100 characters; one letter with 300
            // combining accents: one character of 601 bytes.
            let names = [
                String(repeating: "가", count: 90) + ".png", String(repeating: "x", count: 70) + ".png",
                "b" + String(repeating: "\u{0301}", count: 300) + "c.png",
            ]
            for original in names {
                let sent = try await upload(s, chats, owner, [(original, "image/png", pngBytes)])
                #expect(sent.status == .ok, "\(String(buffer: sent.body))")
                let path = try #require((jsonObject(sent)?["files"] as? [String])?.first)
                let kept = String(path.dropFirst("/static/channelChats/".count + 37))
                #expect(kept.hasSuffix(".png") && kept.utf8.count <= 200 && kept.count <= 100, "\(kept)")
                if original.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || $0 == "." }) {
                    #expect(original.hasSuffix(kept), "the end of the name is kept: \(kept)")
                }
                let served = try await s.get("/v1" + path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!, member)
                #expect(served.status == .ok, "\(path)")
                #expect(Array(served.body.readableBytesView) == pngBytes)
            }
        }
    }
}
