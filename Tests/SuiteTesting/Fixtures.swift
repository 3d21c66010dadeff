import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A signed-up user as the tests drive it.
public struct User: Sendable {
    public let id: String
    public let email: String
    public let token: String

    public init(id: String, email: String, token: String) {
        self.id = id
        self.email = email
        self.token = token
    }
}

extension Stack {
    /// Runs auth, workspace and the gateway.
    public static func workspaces(
        workspaceEnvironment: [String: String] = [:], _ body: @escaping @Sendable (Stack) async throws -> Void
    ) async throws {
        try await run(services: [.auth, .workspace(env: workspaceEnvironment)], body)
    }

    public func user(_ nickname: String = "새싹이") async throws -> User {
        let result = try await join(nickname: nickname)
        return User(id: result.user_id, email: result.email, token: result.token.accessToken)
    }

    public func get(_ uri: String, _ user: User?) async throws -> TestResponse {
        try await request(.get, uri, token: user?.token)
    }

    public func send(_ method: HTTPRequest.Method, _ uri: String, _ user: User?, json: String) async throws -> TestResponse {
        try await request(method, uri, token: user?.token, json: json)
    }

    public func multipartRequest(
        _ method: HTTPRequest.Method, _ uri: String, _ user: User?, fields: [String: String], image: [UInt8]? = nil,
        imageType: String = "image/jpeg"
    ) async throws -> TestResponse {
        let body = multipart(file: image, contentType: imageType, fields: fields)
        return try await client.execute(uri: uri, method: method, headers: headers(token: user?.token, contentType: body.contentType), body: body.body)
    }

    /// Creates a workspace (multipart, as WSX does) and returns its JSON.
    public func createWorkspace(
        _ owner: User, name: String = "ws-\(UUID().uuidString.prefix(8))", description: String? = nil,
        image: [UInt8]? = nil
    ) async throws -> [String: Any] {
        var fields = ["name": name]
        if let description { fields["description"] = description }
        let response = try await multipartRequest(.post, "/v1/workspaces", owner, fields: fields, image: image)
        #expect(response.status == .ok, "create workspace: \(String(buffer: response.body))")
        return try #require(jsonObject(response))
    }

    /// Creates a channel with a JSON body (as AMOR does) and returns its JSON.
    public func createChannel(_ owner: User, in workspace: String, name: String = "ch-\(UUID().uuidString.prefix(8))") async throws -> [String: Any] {
        let response = try await send(.post, "/v1/workspaces/\(workspace)/channels", owner, json: #"{"name":"\#(name)","description":"about","image":null}"#)
        #expect(response.status == .ok, "create channel: \(String(buffer: response.body))")
        return try #require(jsonObject(response))
    }

    /// Invites `user` by email (owner only).
    /// A new workspace of `owner` with `member` invited; its default channel once chat sees both in it.
    public func sharedChannel(_ owner: User, _ member: User) async throws -> (workspace: String, channel: String) {
        let wid = id(try await createWorkspace(owner), "workspace_id")
        try await invite(member, to: wid, by: owner)
        let channel = id(try #require(jsonArray(try await get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        try await waitForChatMember(owner.id, channel: channel)
        try await waitForChatMember(member.id, channel: channel)
        return (wid, channel)
    }

    public func invite(_ user: User, to workspace: String, by owner: User) async throws {
        let response = try await send(.post, "/v1/workspaces/\(workspace)/members", owner, json: #"{"email":"\#(user.email)"}"#)
        #expect(response.status == .ok, "invite: \(String(buffer: response.body))")
    }
}

public func id(_ object: [String: Any]?, _ key: String) -> String {
    (object?[key] as? String) ?? ""
}

/// The status and error code of a response, e.g. "200" or "400 E13".
public func outcome(_ response: TestResponse) -> String {
    if let code = errorCode(response) { return "\(response.status.code) \(code)" }
    return "\(response.status.code)"
}
