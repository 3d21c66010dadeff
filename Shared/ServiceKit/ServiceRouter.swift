import Common
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// One route a service registered: upper-case method and Hummingbird's path pattern.
public struct RegisteredRoute: Sendable, Hashable, Codable, CustomStringConvertible {
    public var method: String
    public var path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    public var description: String { "\(method) \(path)" }
}

/// A Hummingbird router that remembers what was registered on it: every `on(path, method:)`,
/// whether made directly, through a route group or a `RouteCollection`, is recorded with the
/// full path (`/v1/workspaces/{workspace}/channels`). `GET /routes` on the service's own port
/// lists them, so the OpenAPI document can be checked against what the services really serve
/// (`OpenAPIDocumentTests`), and an operator can see a service's surface without reading code.
public final class ServiceRouter<Context: RequestContext>: RouterMethods, HTTPResponderBuilder {
    /// The Hummingbird router the routes go on.
    public let router: Router<Context>
    private let registered = Locked<[RegisteredRoute]>([])

    public init(_ router: Router<Context>) {
        self.router = router
    }

    /// What was registered so far, in order.
    public var routes: [RegisteredRoute] { registered.value }

    @discardableResult public func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        registered.withLock { $0.append(RegisteredRoute(method: method.rawValue, path: path.description)) }
        router.on(path, method: method, responder: responder)
        return self
    }

    @discardableResult public func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    public func buildResponder() -> RouterResponder<Context> { router.buildResponder() }

    /// `GET /routes`: the registered routes as `[{"method","path"}]`, sorted by path.
    func addRouteListing() {
        let registered = self.registered
        router.get("/routes") { _, _ in
            let list = registered.value.sorted { ($0.path, $0.method) < ($1.path, $1.method) }
            let data = try JSONEncoder().encode(list)
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}
