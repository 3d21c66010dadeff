import ArgumentParser
import AsyncHTTPClient
import Foundation
import LoadGen
import NIOCore
import NIOHTTP1

/// `chatsuite bench upload`: large multipart uploads through a running gateway, for `--seconds`
/// each from `--concurrency` clients:
/// 1. profile images, `PUT /v1/users/me/image` (auth reads the body whole, parses it, stores the
///    image and deletes the previous one);
/// 2. message attachments, `POST /v1/workspaces/{w}/channels/{c}/chats` with one file part (the
///    gateway streams the body to chat, which parses it as it arrives and writes the file to disk).
/// Reports uploads/s, MB/s and latency percentiles per phase.
struct UploadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload", abstract: "Multipart uploads (profile image, message attachment) through a running gateway.")

    @OptionGroup var load: GatewayLoadOptions

    @Option(help: "Bytes of the uploaded file (the contract allows 5 MB).")
    var bytes: Int = 4_900_000

    @Option(help: "Phases to run: profile, attachment (comma-separated).")
    var phases: String = "profile,attachment"

    func validate() throws {
        guard (16...5 * 1024 * 1024).contains(bytes) else { throw ValidationError("--bytes must be 16 to 5 242 880") }
    }

    func run() async throws {
        let client = load.client
        let tag = UUID().uuidString.prefix(8).lowercased()
        let token = try await client.joinBenchUser("upload-bench", tag: tag)
        let file = Self.jpegLike(bytes: bytes)
        let wanted = Set(phases.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        print("file: \(bytes) bytes (JPEG signature, pseudo-random content)  concurrency: \(load.concurrency)  seconds: \(load.seconds) per phase")

        if wanted.contains("profile") {
            let form = Self.multipart(file: file, part: "image", fields: [:])
            let result = try await load.runner.run { _, _ in
                try await upload(.PUT, "/v1/users/me/image", form: form, token: token)
            }
            report("profile image", result)
        }
        if wanted.contains("attachment") {
            let created = try await client.send(.POST, "/v1/workspaces", token: token, json: #"{"name":"upload-bench-\#(tag)"}"#)
            guard let workspace = client.json(created.body)?["workspace_id"] as? String else {
                throw ValidationError("workspace creation failed with HTTP \(created.status.code)")
            }
            let list = try await client.send(.GET, "/v1/workspaces/\(workspace)/channels", token: token)
            let channels = (try? JSONSerialization.jsonObject(with: Data(list.body.readableBytesView))) as? [[String: Any]] ?? []
            guard let channel = channels.first?["channel_id"] as? String else { throw ValidationError("the new workspace has no channel") }
            let path = "/v1/workspaces/\(workspace)/channels/\(channel)/chats"
            // Chat learns the channel from workspace.v1.
            let deadline = ContinuousClock.now + .seconds(30)
            while try await client.send(.GET, path + "?cursor_date=2100-01-01T00:00:00.000Z", token: token).status != .ok {
                guard ContinuousClock.now < deadline else { throw ValidationError("chat did not learn the channel within 30 s") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let form = Self.multipart(file: file, part: "files", fields: ["content": "bench"])
            let result = try await load.runner.run { _, _ in
                try await upload(.POST, path, form: form, token: token)
            }
            report("attachment", result)
        }
    }

    private func report(_ what: String, _ result: LoadRunner.Result) {
        print(result.line(what, concurrency: load.concurrency) + String(format: "  (%.1f MB/s)", result.perSecond * Double(bytes) / 1e6))
    }

    /// One upload; true when the service answered 200.
    private func upload(_ method: HTTPMethod, _ path: String, form: (body: ByteBuffer, contentType: String), token: String) async throws -> Bool {
        let client = load.client
        var request = HTTPClientRequest(url: client.base + path)
        request.method = method
        request.headers.add(name: "SesacKey", value: client.sesacKey)
        request.headers.add(name: "Authorization", value: token)
        request.headers.add(name: "Content-Type", value: form.contentType)
        request.body = .bytes(form.body)
        let response = try await client.http.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        if response.status != .ok { print("\(path): HTTP \(response.status.code) \(String(buffer: answer).prefix(200))") }
        return response.status == .ok
    }

    /// A JPEG signature, then pseudo-random bytes (as compressed image data is: CR and LF, and
    /// pieces of the delimiter, now and then).
    static func jpegLike(bytes: Int) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
        out.reserveCapacity(bytes)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while out.count < bytes {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            withUnsafeBytes(of: state) { out += $0.prefix(bytes - out.count) }
        }
        return out
    }

    static func multipart(file: [UInt8], part: String, fields: [String: String]) -> (body: ByteBuffer, contentType: String) {
        let boundary = "Boundary-\(UUID().uuidString)"
        var body = ByteBuffer()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n")
        }
        body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part)\"; filename=\"photo.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n")
        body.writeBytes(file)
        body.writeString("\r\n--\(boundary)--\r\n")
        return (body, "multipart/form-data; boundary=\(boundary)")
    }
}
