import HTTPTypes
import ServiceCatalog
import Testing

@testable import GatewayApp

@Suite("The gateway's route table, built from the catalog")
struct RouteTableTests {
    let table = RouteTable.suite

    func owner(_ method: HTTPRequest.Method, _ path: String) -> String? {
        table.match(method: method, path: path).map { "\($0.upstream)\($0.isPublic ? " public" : "")" }
    }

    @Test("every client path of the contract goes to the service that serves it")
    func contractPaths() {
        let cases: [(HTTPRequest.Method, String, String?)] = [
            (.post, "/v1/users/join", "auth public"),
            (.post, "/v1/users/login", "auth public"),
            (.post, "/v1/users/login/kakao", "auth public"),
            (.post, "/v1/users/login/apple", "auth public"),
            (.post, "/v1/users/validation/email", "auth public"),
            (.get, "/v1/auth/refresh", "auth public"),
            (.get, "/v1/users/me", "auth"),
            (.put, "/v1/users/me/image", "auth"),
            (.get, "/v1/friends", "auth"),
            (.post, "/v1/friends/abc/accept", "auth"),
            (.get, "/v1/workspaces", "workspace"),
            (.post, "/v1/workspaces", "workspace"),
            (.get, "/v1/workspaces/w1", "workspace"),
            (.get, "/v1/workspaces/w1/channels", "workspace"),
            (.get, "/v1/workspaces/w1/channels/c1", "workspace"),
            (.get, "/v1/workspaces/w1/members/u1", "workspace"),
            (.get, "/v1/workspaces/w1/channels/c1/chats", "chat"),
            (.post, "/v1/workspaces/w1/channels/c1/chats", "chat"),
            (.patch, "/v1/workspaces/w1/channels/c1/chats/m1", "chat"),
            (.get, "/v1/workspaces/w1/channels/c1/unreads", "chat"),
            (.post, "/v1/workspaces/w1/channels/c1/read", "chat"),
            (.get, "/v1/workspaces/w1/chats/search", "chat"),
            (.get, "/v1/workspaces/w1/unreads", "chat"),
            (.get, "/v1/workspaces/w1/dms", "chat"),
            (.get, "/v1/workspaces/w1/dms/r1/chats", "chat"),
            (.get, "/v1/invites/code1", "workspace"),
            (.get, "/v1/store/item/list", "payment"),
            (.post, "/v1/store/pay/validation", "payment"),
            (.get, "/v1/static/profiles/a.jpg", "auth"),
            (.get, "/v1/static/workspaces/a.jpg", "workspace"),
            (.get, "/v1/static/channelChats/20260101/a.jpg", "chat"),
            // Nothing serves these.
            (.get, "/v1/invites", nil),
            (.get, "/v1/invites/a/b", nil),
            (.get, "/v2/users/me", nil),
            (.get, "/", nil),
        ]
        for (method, path, expected) in cases {
            #expect(owner(method, path) == expected, "\(method) \(path)")
        }
    }

    @Test("a public route is public for its method only; others fall to the authenticated pattern")
    func publicByMethod() {
        #expect(owner(.get, "/v1/users/login") == "auth")
        #expect(owner(.post, "/v1/auth/refresh") == nil)
        #expect(table.match(method: .post, path: "/v1/users/join")?.pattern == "/v1/users/join")
        #expect(table.match(method: .get, path: "/v1/users/join")?.pattern == "/v1/users/**")
    }

    @Test("the most specific pattern wins whatever the declaration order")
    func specificity() {
        let a = ServiceEntry(name: "a", port: 1, routes: [.any("/v1/x/**"), .any("/v1/*/y")])
        let b = ServiceEntry(name: "b", port: 2, routes: [.any("/v1/x/*"), .any("/v1/x/y/**")])
        let c = ServiceEntry(name: "c", port: 3, routes: [.any("/v1/x"), .publicPost("/v1/x/y/z")])
        for order in [[a, b, c], [c, b, a], [b, a, c]] {
            let table = RouteTable(order)
            #expect(table.match(method: .get, path: "/v1/x")?.upstream == "c")  // end beats **
            #expect(table.match(method: .get, path: "/v1/x/q")?.upstream == "b")  // * beats **
            #expect(table.match(method: .get, path: "/v1/x/y")?.upstream == "b")  // /v1/x/y/** beats /v1/x/* and /v1/*/y
            #expect(table.match(method: .get, path: "/v1/z/y")?.upstream == "a")
            #expect(table.match(method: .get, path: "/v1/x/y/q")?.upstream == "b")
            #expect(table.match(method: .post, path: "/v1/x/y/z").map { "\($0.upstream) \($0.isPublic)" } == "c true")
            #expect(table.match(method: .get, path: "/v1/x/y/z").map { "\($0.upstream) \($0.isPublic)" } == "b false")
            #expect(table.match(method: .get, path: "/v1/x/q/r")?.upstream == "a")
        }
    }

    @Test("no two services claim the same pattern")
    func catalogIsUnambiguous() {
        #expect(table.conflicts.isEmpty)
        let clash = RouteTable([ServiceEntry(name: "a", port: 1, routes: [.any("/v1/x/**")]), ServiceEntry(name: "b", port: 2, routes: [.any("/v1/x/**")])])
        #expect(clash.conflicts == ["* /v1/x/**: a and b"])
    }

    @Test("every route a catalog entry declares reaches that entry (none is shadowed by another service's)")
    func everyDeclaredRouteIsReachable() {
        for service in ServiceEntry.all {
            for route in service.routes {
                // A concrete path of the pattern: `*` and `**` become a segment that no literal uses.
                let path = route.pattern.split(separator: "/").map { $0 == "*" || $0 == "**" ? "zz-any" : String($0) }.joined(separator: "/")
                let method = route.method.flatMap { HTTPRequest.Method($0) } ?? .get
                let match = table.match(method: method, path: "/" + path)
                #expect(match?.upstream == service.name && match?.isPublic == route.isPublic, "\(method) /\(path) declared by \(service)")
            }
        }
    }

    @Test("empty segments and trailing slashes do not change the owner")
    func slashes() {
        #expect(owner(.get, "//v1//workspaces/") == "workspace")
        #expect(owner(.get, "/v1/workspaces/w1/channels/c1/chats/") == "chat")
    }
}
