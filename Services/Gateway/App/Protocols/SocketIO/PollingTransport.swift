import HTTPTypes
import Hummingbird
import NIOCore

/// Engine.IO over HTTP long-polling at `/socket.io/`: the handshake (GET without `sid`), polls
/// (GET: waits for packets) and posts (POST: the client's packets). Malformed requests get the
/// reference server's JSON error `{"code":…,"message":…}` with 400 (403 for a refused token),
/// never a 500.
struct PollingTransport: Sendable {
    let server: SocketIOServer

    func addRoutes(to router: some RouterMethods<GatewayRequestContext>) {
        // Matches `/socket.io/` too (the router ignores a trailing slash).
        router.get("/socket.io") { request, context in await handle(request, clientAddress: context.clientAddress) }
        router.post("/socket.io") { request, context in await handle(request, clientAddress: context.clientAddress) }
    }

    func handle(_ request: Request, clientAddress: String) async -> Response {
        let query = request.uri.queryParameters
        guard let version = EngineIOVersion(query: query["EIO"].map(String.init)) else { return Self.error(.unsupportedVersion) }
        switch query["transport"].map(String.init) {
        case "polling": break
        // A WebSocket request that reached HTTP was not upgradable (unknown or upgraded session).
        case "websocket":
            if query["sid"] != nil { return Self.error(.unknownSession) }
            if case .failure(let error) = await server.authenticate(request.headers) { return Self.error(error) }
            return Self.error(.badRequest)
        default: return Self.error(.unknownTransport)
        }
        guard let sid = query["sid"] else {
            guard request.method == .get else { return Self.error(.badHandshakeMethod) }
            guard server.admission.allowHandshake(from: clientAddress) else { return Self.error(.tooManyRequests) }
            switch await server.authenticate(request.headers) {
            case .failure(let error): return Self.error(error)
            case .success(let identity):
                let (_, packets) = server.open(version: version, transport: .polling, identity: identity, clientAddress: clientAddress)
                return Self.payload(packets, version: version)
            }
        }
        guard let session = server.session(String(sid)), session.version == version else { return Self.error(.unknownSession) }
        if request.method == .post {
            return await post(request, session)
        }
        switch await session.next(poll: true) {
        case .packets(let packets):
            session.written(bytes: packets.byteCount)
            return Self.payload(packets.map(\.text), version: version)
        case .closed: return Self.payload([EngineIOPacket.encode(.close)], version: version)
        case .busy:
            // Two polls at once (or a poll after the upgrade): the reference server ends the session.
            server.close(session, reason: "overlapping polls")
            return Self.error(.badRequest)
        }
    }

    private func post(_ request: Request, _ session: EngineSession) async -> Response {
        var request = request
        guard let body = try? await request.collectBody(upTo: server.settings.maxPayloadBytes),
            let packets = EngineIOPayload.decode(Array(body.readableBytesView), version: session.version)
        else {
            server.close(session, reason: "malformed or oversized payload")
            return Self.error(.badRequest)
        }
        for packet in packets {
            guard await server.receive(packet[...], from: session) else { break }
        }
        return Self.text("ok")
    }

    static func payload(_ packets: [String], version: EngineIOVersion) -> Response {
        text(EngineIOPayload.encode(packets, version: version))
    }

    static func text(_ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=UTF-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func error(_ error: EngineIOError) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let body = #"{"code":\#(error.code),"message":"\#(error.message)"}"#
        let status: HTTPResponse.Status =
            switch error {
            case .forbidden: .forbidden
            case .tooManyRequests: .tooManyRequests
            default: .badRequest
            }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
