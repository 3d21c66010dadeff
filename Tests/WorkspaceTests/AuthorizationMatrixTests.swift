import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

/// Owner / member / non-member / stranger × every workspace endpoint. Each endpoint gets a fresh
/// workspace (with a cover image, a second channel the member joined, a second category and an
/// invite code); roles run from least to most privileged so a refused request changes nothing
/// the next role relies on. A refusal must never carry data.
@Suite("Authorization matrix")
struct AuthorizationMatrixTests {
    struct Fixture {
        let workspace: String
        let channel: String
        let category: String
        let invite: String
        let cover: String
        let owner: User
        let member: User
        let extra: User
    }

    enum Role: String, CaseIterable { case stranger, nonMember, member, owner }

    struct Endpoint {
        let name: String
        /// Expected outcome for stranger is always "401 E02"; these are non-member, member, owner.
        let nonMember: String
        let member: String
        let owner: String
        let call: @Sendable (Stack, Fixture, Role, User?) async throws -> TestResponse
    }

    static func json(_ method: HTTPRequest.Method, _ path: @escaping @Sendable (Fixture) -> String, _ body: @escaping @Sendable (Fixture, Role) -> String)
        -> @Sendable (Stack, Fixture, Role, User?) async throws -> TestResponse
    {
        { s, f, role, user in try await s.send(method, path(f), user, json: body(f, role)) }
    }

    static func plain(_ method: HTTPRequest.Method, _ path: @escaping @Sendable (Fixture) -> String)
        -> @Sendable (Stack, Fixture, Role, User?) async throws -> TestResponse
    {
        { s, f, _, user in try await s.request(method, path(f), token: user?.token) }
    }

    static let endpoints: [Endpoint] = [
        Endpoint(name: "GET workspace", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)" }),
        Endpoint(name: "PUT workspace", nonMember: "400 E13", member: "400 E14", owner: "200") { s, f, role, user in
            try await s.multipartRequest(.put, "/v1/workspaces/\(f.workspace)", user, fields: ["name": "renamed-\(role)-\(f.workspace.prefix(8))"])
        },
        Endpoint(name: "DELETE workspace", nonMember: "400 E13", member: "400 E14", owner: "200", call: plain(.delete) { "/v1/workspaces/\($0.workspace)" }),
        Endpoint(name: "GET exit", nonMember: "400 E13", member: "200", owner: "400 E15", call: plain(.get) { "/v1/workspaces/\($0.workspace)/exit" }),
        Endpoint(
            name: "PUT transfer", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.put, { "/v1/workspaces/\($0.workspace)/transfer/ownership" }) { f, _ in #"{"owner_id":"\#(f.member.id)"}"# }),
        Endpoint(
            name: "POST members (invite)", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.post, { "/v1/workspaces/\($0.workspace)/members" }) { f, _ in #"{"email":"\#(f.extra.email)"}"# }),
        Endpoint(name: "GET members", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/members" }),
        Endpoint(
            name: "GET member", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/members/\($0.owner.id)" }
        ),
        Endpoint(
            name: "GET search", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/search?keyword=a" }),
        Endpoint(name: "GET channels", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/channels" }),
        Endpoint(
            name: "GET my-channels", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/my-channels" }),
        Endpoint(
            name: "POST channels", nonMember: "400 E13", member: "200", owner: "200",
            call: json(.post, { "/v1/workspaces/\($0.workspace)/channels" }) { _, role in #"{"name":"new-\#(role)"}"# }),
        Endpoint(
            name: "GET channel", nonMember: "400 E13", member: "200", owner: "200",
            call: plain(.get) { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)" }),
        Endpoint(name: "PUT channel", nonMember: "400 E13", member: "400 E14", owner: "200") { s, f, role, user in
            try await s.multipartRequest(.put, "/v1/workspaces/\(f.workspace)/channels/\(f.channel)", user, fields: ["name": "edited-\(role)"])
        },
        Endpoint(
            name: "DELETE channel", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: plain(.delete) { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)" }),
        Endpoint(
            name: "GET channel exit", nonMember: "400 E13", member: "200", owner: "400 E15",
            call: plain(.get) { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)/exit" }),
        Endpoint(
            name: "PUT channel transfer", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.put, { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)/transfer/ownership" }) { f, _ in #"{"owner_id":"\#(f.member.id)"}"# }),
        Endpoint(
            name: "GET channel members", nonMember: "400 E13", member: "200", owner: "200",
            call: plain(.get) { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)/members" }),
        Endpoint(
            name: "POST channel join", nonMember: "400 E13", member: "400 E12", owner: "400 E12",
            call: plain(.post) { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)/join" }),
        Endpoint(
            name: "PUT channel location", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.put, { "/v1/workspaces/\($0.workspace)/channels/\($0.channel)/location" }) { _, _ in #"{"next":0}"# }),
        Endpoint(name: "GET categories", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/categories" }),
        Endpoint(
            name: "POST categories", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.post, { "/v1/workspaces/\($0.workspace)/categories" }) { _, _ in #"{"name":"more"}"# }),
        Endpoint(
            name: "PUT category", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.put, { "/v1/workspaces/\($0.workspace)/categories/\($0.category)" }) { _, role in #"{"name":"renamed-\#(role)"}"# }),
        Endpoint(
            name: "DELETE category", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: plain(.delete) { "/v1/workspaces/\($0.workspace)/categories/\($0.category)" }),
        Endpoint(
            name: "PUT category location", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: json(.put, { "/v1/workspaces/\($0.workspace)/categories/\($0.category)/location" }) { _, _ in #"{"next":"0"}"# }),
        Endpoint(
            name: "POST invites", nonMember: "400 E13", member: "200", owner: "200",
            call: json(.post, { "/v1/workspaces/\($0.workspace)/invites" }) { _, _ in #"{"maxUses":5}"# }),
        Endpoint(name: "GET invites", nonMember: "400 E13", member: "400 E14", owner: "200", call: plain(.get) { "/v1/workspaces/\($0.workspace)/invites" }),
        Endpoint(
            name: "DELETE invite", nonMember: "400 E13", member: "400 E14", owner: "200",
            call: plain(.delete) { "/v1/workspaces/\($0.workspace)/invites/\($0.invite)" }),
        Endpoint(name: "GET cover image", nonMember: "400 E13", member: "200", owner: "200", call: plain(.get) { "/v1\($0.cover)" }),
    ]

    func fixture(_ s: Stack, owner: User, member: User, extra: User) async throws -> Fixture {
        let created = try await s.createWorkspace(owner, image: jpegBytes)
        let wid = id(created, "workspace_id")
        try await s.invite(member, to: wid, by: owner)
        let channel = id(try await s.createChannel(owner, in: wid, name: "second"), "channel_id")
        #expect(try await s.request(.post, "/v1/workspaces/\(wid)/channels/\(channel)/join", token: member.token).status == .ok)
        let category = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/categories", owner, json: #"{"name":"extra"}"#)), "category_id")
        let invite = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/invites", owner, json: "{}")), "code")
        return Fixture(
            workspace: wid, channel: channel, category: category, invite: invite, cover: id(created, "coverImage"),
            owner: owner, member: member, extra: extra)
    }

    @Test("every endpoint × owner / member / non-member / stranger")
    func matrix() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let outsider = try await s.user()
            let extra = try await s.user()
            var table: [String] = []
            for endpoint in Self.endpoints {
                let f = try await fixture(s, owner: owner, member: member, extra: extra)
                for role in Role.allCases {
                    let user: User? =
                        switch role {
                        case .stranger: nil
                        case .nonMember: outsider
                        case .member: member
                        case .owner: owner
                        }
                    let response = try await endpoint.call(s, f, role, user)
                    let expected =
                        switch role {
                        case .stranger: "401 E02"
                        case .nonMember: endpoint.nonMember
                        case .member: endpoint.member
                        case .owner: endpoint.owner
                        }
                    let got = outcome(response)
                    #expect(got == expected, "\(endpoint.name) as \(role): \(String(buffer: response.body))")
                    if response.status != .ok {
                        // A refusal is only the error code: no workspace data leaks with it.
                        #expect(response.body.readableBytes < 40, "\(endpoint.name) as \(role) leaked \(String(buffer: response.body))")
                    }
                    table.append("\(endpoint.name) \(role): \(got)")
                }
            }
            #expect(table.count == Self.endpoints.count * Role.allCases.count)
        }
    }
}
