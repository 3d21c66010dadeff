import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

@testable import GatewayApp

/// Smooth's `POST /chat-server/channel/file` (client contract §2.1) end to end through the edge,
/// with real PostgreSQL, embedded Kafka and the real chat-fanout: the stored message, the STOMP
/// file frame (§2.2), history, and the attachments served without a token.
@Suite("Smooth file uploads", .serialized)
struct SmoothFileTests {
    /// The file frame's keys (Smooth's `FileUploadResponse`).
    static let frameKeys: Set<String> = ["id", "name", "profileImage", "message", "thumbnail", "userId", "channelId", "type", "fileType", "time"]

    @Test("image and thumbnail in a community channel: envelope 1000, STOMP file frame, history, token-free URLs; deleted → 404")
    func community() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": "gw-file-\(UUID().uuidString.prefix(6))"]) { s in
            let replica = try await RealFanoutTests.startReplica(s, "fanout-file")
            let owner = try await s.smoothUser(name: "올린이")
            let channel = try await Self.communityChannel(s, owner)
            let port = try #require(s.client.port)
            let receiver = try await StompTestClient.connected(port: port, token: owner.token, userId: String(owner.id))
            try await receiver.subscribe("/topic/group/\(channel.alias)", id: "sub-0")

            // As the iOS app sends it: files first, names without an extension, then the fields.
            let thumbnail = pngBytes + [1, 2, 3]
            let upload = try await Self.upload(
                s, owner.token,
                files: [
                    ("image", "messgae-image-Optional(\(channel.community))-\(owner.id)", "image/jpeg", jpegBytes),
                    ("thumbnail", "messgae-thumbnail-Optional(\(channel.community))-\(owner.id)", "image/jpeg", thumbnail),
                ],
                fields: Self.fields(owner.id, channel.alias, community: channel.community))
            #expect(upload.outcome == "200 1000", "\(upload.body)")
            #expect(Set(upload.envelope?.keys.map { $0 } ?? []) == ["isSuccess", "code", "message"], "Smooth's CommonResponse: no result")

            let frames = try await receiver.waitFor("the file frame") { _ in receiver.messages.contains { $0["fileType"] != nil } }
            #expect(!frames.isEmpty)
            let frame = try #require(receiver.messages.first { $0["fileType"] != nil })
            #expect(Set(frame.keys) == Self.frameKeys, "\(frame.keys.sorted())")
            #expect(frame.values.allSatisfy { $0 is String }, "string values only")
            #expect(frame["type"] as? String == "community" && frame["fileType"] as? String == "image")
            #expect(frame["userId"] as? String == String(owner.id) && frame["channelId"] as? String == String(channel.alias))
            #expect(frame["name"] as? String == "올린이")
            let (imageURL, thumbnailURL) = (try #require(frame["message"] as? String), try #require(frame["thumbnail"] as? String))
            let imagePath = try Self.filePath(imageURL)
            let thumbnailPath = try Self.filePath(thumbnailURL)
            #expect(imagePath != thumbnailPath)
            #expect(imagePath.hasSuffix(".jpg") && thumbnailPath.hasSuffix(".png"), "named after their content: \(imagePath) \(thumbnailPath)")

            // History: the same message with both URLs (no token, as the app reads it).
            let page = try await s.smooth(.get, "/chat-server/community?ch_id=\(channel.alias)&page=0&size=20")
            let item = try #require(page.resultArray?.last, "\(page.body)")
            #expect(item["fileType"] as? String == "image" && item["id"] as? String == frame["id"] as? String)
            #expect(try Self.filePath(try #require(item["message"] as? String)) == imagePath)
            #expect(try Self.filePath(try #require(item["thumbnail"] as? String)) == thumbnailPath)
            #expect((item["message"] as? String)?.hasPrefix("http://") == true)

            // Token-free reads return the bytes with their type.
            let image = try await s.client.execute(uri: imagePath, method: .get, headers: [:], body: nil)
            #expect(image.status == .ok && Array(buffer: image.body) == jpegBytes && image.headers[.contentType] == "image/jpeg")
            let thumb = try await s.client.execute(uri: thumbnailPath, method: .get, headers: [:], body: nil)
            #expect(thumb.status == .ok && Array(buffer: thumb.body) == thumbnail && thumb.headers[.contentType] == "image/png")
            let madeUp = try await s.client.execute(uri: "/chat-server/files/\(UUID().uuidString.lowercased())_x.jpg", method: .get, headers: [:], body: nil)
            #expect(madeUp.status == .notFound)

            // Deleted: its files are no longer served.
            let sender = try await StompTestClient.connected(port: port, token: owner.token, userId: String(owner.id))
            let messageId = try #require(frame["id"] as? String)
            sender.send(
                to: "/kafka/send-channel-delete", #"{"id":"\#(messageId)","userId":\#(owner.id),"type":"delete","channelId":\#(channel.alias)}"#)
            _ = try await receiver.waitFor("the deletion") { _ in receiver.messages.contains { $0["type"] as? String == "delete" } }
            #expect(try await s.client.execute(uri: imagePath, method: .get, headers: [:], body: nil).status == .notFound)
            #expect(try await s.client.execute(uri: thumbnailPath, method: .get, headers: [:], body: nil).status == .notFound)
            await receiver.stop()
            await sender.stop()
            try await replica.stop()
        }
    }

    @Test("refusals leave nothing behind: another's userId 2103, not in the channel 4004, bad form 2100, part over 5 MB 413, no token 401")
    func refusals() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.smoothUser(name: "주인")
            let outsider = try await s.smoothUser(name: "남남이")
            let channel = try await Self.communityChannel(s, owner)
            let directory = try #require(s.chatFilesDirectory)
            let before = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            let image = ("image", "photo", "image/jpeg", jpegBytes)
            let thumbnail = ("thumbnail", "thumb", "image/png", pngBytes)
            let fields = Self.fields(owner.id, channel.alias, community: channel.community)
            func outcome(_ token: String?, _ files: [Part], _ fields: [String: String]) async throws -> String {
                try await Self.upload(s, token, files: files, fields: fields).outcome
            }
            #expect(try await outcome(owner.token, [image, thumbnail], fields.merging(["userId": String(outsider.id)]) { $1 }) == "400 2103")
            #expect(try await outcome(outsider.token, [image, thumbnail], Self.fields(outsider.id, channel.alias)) == "400 4004")
            #expect(try await outcome(owner.token, [thumbnail], fields) == "400 2100", "no image")
            #expect(try await outcome(owner.token, [image, image, thumbnail], fields) == "400 2100", "two images")
            #expect(try await outcome(owner.token, [image, thumbnail], fields.merging(["type": "group"]) { $1 }) == "400 2100")
            #expect(try await outcome(owner.token, [image, thumbnail], fields.merging(["fileType": "gif"]) { $1 }) == "400 2100")
            #expect(try await outcome(owner.token, [image, thumbnail], fields.merging(["channelId": "abc"]) { $1 }) == "400 2100")
            #expect(try await outcome(owner.token, [image, thumbnail], fields.filter { $0.key != "userId" }) == "400 2100")
            #expect(try await outcome(owner.token, [("image", "notes", "text/plain", Array("just text".utf8))], fields) == "400 2100")
            let big = jpegBytes + [UInt8](repeating: 7, count: 5 * 1024 * 1024)
            let tooLarge = try await Self.upload(s, owner.token, files: [("image", "big", "image/jpeg", big), thumbnail], fields: fields)
            #expect(tooLarge.status == .contentTooLarge && tooLarge.code == 2100, "\(tooLarge.outcome) \(tooLarge.body)")
            let anonymous = try await Self.upload(s, nil, files: [image, thumbnail], fields: fields)
            #expect(anonymous.status == .unauthorized && anonymous.response.body.readableBytes == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == before, "refused uploads are removed")
            let page = try await s.smooth(.get, "/chat-server/community?ch_id=\(channel.alias)")
            #expect(page.outcome == "200 1000" && page.resultArray?.isEmpty == true, "\(page.body)")
        }
    }

    @Test("type=direct: a workspace DM room by its integer id; stored in the room, framed on /topic/direct/{roomId}; a room one is not in 4018")
    func direct() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": "gw-file-dm-\(UUID().uuidString.prefix(6))"]) { s in
            let replica = try await RealFanoutTests.startReplica(s, "fanout-file-dm")
            let (a, b, c) = (try await s.user("에이"), try await s.user("비"), try await s.user("씨"))
            let (workspace, _) = try await s.sharedChannel(a, b)
            try await s.invite(c, to: workspace, by: a)
            for user in [a, b, c] { try await s.waitForProfile(user.id) }
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(workspace)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            let db = try #require(s.chatDatabase)
            var found: Int64?
            for try await alias in try await db.query("SELECT alias FROM dm_rooms WHERE id = \(try #require(UUID(uuidString: room)))").decode(Int64.self) {
                found = alias
            }
            let roomAlias = try #require(found)
            let (aliasA, aliasC) = (try await s.userAlias(a.id), try await s.userAlias(c.id))
            try await eventually("chat knows a's integer id", timeout: .seconds(30)) {
                var known = false
                for try await value in try await db.query("SELECT alias FROM user_profiles WHERE user_id = \(try #require(UUID(uuidString: a.id)))")
                    .decode(Int64?.self)
                { known = value == aliasA }
                return known
            }

            let receiver = try await StompTestClient.connected(port: try #require(s.client.port), token: b.token)
            try await receiver.subscribe("/topic/direct/\(roomAlias)", id: "dm")

            // A file without a thumbnail (accepted), named with its extension.
            let fields = ["userId": String(aliasA), "channelId": String(roomAlias), "type": "direct", "fileType": "file"]
            let upload = try await Self.upload(s, a.token, files: [("image", "보고서.pdf", "application/pdf", pdfBytes)], fields: fields)
            #expect(upload.outcome == "200 1000", "\(upload.body)")
            _ = try await receiver.waitFor("the file frame") { _ in receiver.messages.contains { $0["fileType"] != nil } }
            let frame = try #require(receiver.messages.first { $0["fileType"] != nil })
            #expect(Set(frame.keys) == Self.frameKeys, "\(frame.keys.sorted())")
            #expect(frame["type"] as? String == "direct" && frame["fileType"] as? String == "file" && frame["thumbnail"] as? String == "")
            #expect(frame["userId"] as? String == String(aliasA) && frame["channelId"] as? String == String(roomAlias), "the room by its integer id")

            let stored = try #require(jsonArray(try await s.get("/v1/workspaces/\(workspace)/dms/\(room)/chats", b)))
            let files = try #require(stored.last?["files"] as? [String])
            #expect(files.count == 1 && files[0].hasPrefix("/static/dmChats/") && files[0].hasSuffix("보고서.pdf"), "\(files)")
            let path = try Self.filePath(try #require(frame["message"] as? String))
            let served = try await s.client.execute(uri: path, method: .get, headers: [:], body: nil)
            #expect(served.status == .ok && Array(buffer: served.body) == pdfBytes && served.headers[.contentType] == "application/pdf")

            // Not a participant, or a channel's id as a room: 4018.
            let asC = fields.merging(["userId": String(aliasC)]) { $1 }
            #expect(try await Self.upload(s, c.token, files: [("image", "x.pdf", "application/pdf", pdfBytes)], fields: asC).outcome == "400 4018")
            let unknown = fields.merging(["channelId": String(roomAlias == 1 ? 2 : roomAlias - 1)]) { $1 }
            #expect(try await Self.upload(s, a.token, files: [("image", "x.pdf", "application/pdf", pdfBytes)], fields: unknown).outcome == "400 4018")
            await receiver.stop()
            try await replica.stop()
        }
    }

    // MARK: helpers

    typealias Part = (field: String, filename: String, contentType: String, bytes: [UInt8])

    /// The form's text fields as the app sends them (its `name` and `profileImage` are ignored).
    static func fields(_ userId: Int, _ channelId: Int, community: Int? = nil) -> [String: String] {
        var fields = [
            "userId": String(userId), "channelId": String(channelId), "type": "community", "fileType": "image", "name": "아무개",
            "profileImage": "https://elsewhere.example/me.png",
        ]
        if let community { fields["communityId"] = String(community) }
        return fields
    }

    /// A Smooth upload: the file parts first (as the app orders them), then the text fields.
    static func upload(_ s: Stack, _ token: String?, files: [Part], fields: [String: String]) async throws -> SmoothAnswer {
        let boundary = "Boundary-\(UUID().uuidString)"
        var body = ByteBuffer()
        for part in files {
            body.writeString(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.field)\"; filename=\"\(part.filename)\"\r\n"
                    + "Content-Type: \(part.contentType)\r\n\r\n")
            body.writeBytes(part.bytes)
            body.writeString("\r\n")
        }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(key)\"\r\n\r\n\(value)\r\n")
        }
        body.writeString("--\(boundary)--\r\n")
        let headers = s.smoothHeaders(token: token, contentType: "multipart/form-data; boundary=\(boundary)")
        return SmoothAnswer(response: try await s.client.execute(uri: "/chat-server/channel/file", method: .post, headers: headers, body: body))
    }

    /// The path of an attachment URL (percent-encoded, to request it), which must be absolute and
    /// under `/chat-server/files/`.
    static func filePath(_ url: String) throws -> String {
        let parsed = try #require(URL(string: url), "not a URL: \(url)")
        #expect(parsed.scheme == "http" && parsed.host != nil, "absolute: \(url)")
        let path = parsed.path(percentEncoded: true)
        #expect(path.hasPrefix("/chat-server/files/"), "\(url)")
        return path
    }

    /// A new community's text channel, once chat lets its owner read it.
    static func communityChannel(_ s: Stack, _ owner: Stack.SmoothUser) async throws -> (community: Int, alias: Int) {
        let created = try await s.smoothMultipart(.post, "/community-server/community", owner, fields: ["name": "파일 서버", "public": "true"], fileField: "icon")
        #expect(created.outcome == "200 1000", "\(created.body)")
        let community = try #require(created.result?["id"] as? Int)
        let layout = try await s.smooth(.get, "/community-server/community/\(community)", owner)
        let channels = (layout.result?["categories"] as? [[String: Any]] ?? []).flatMap { $0["channels"] as? [[String: Any]] ?? [] }
        let alias = try #require(channels.first { $0["type"] as? String == "TEXT" }?["id"] as? Int, "\(layout.body)")
        try await eventually("chat lets the owner read the channel", timeout: .seconds(30)) {
            try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&size=1", owner).outcome == "200 1000"
        }
        return (community, alias)
    }
}
