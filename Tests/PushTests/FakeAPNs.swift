import Common
import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// A fake APNs provider API: HTTP/2 over TLS (ALPN `h2` only; a certificate for 127.0.0.1 from a
/// CA made for the test), checking each request as Apple does — the ES256 provider token
/// (signature with the team's key, `iss`, `kid`), `apns-topic`, `apns-push-type`,
/// `apns-collapse-id`, the `aps` payload — and recording it. Tokens in `unregistered` answer 410.
final class FakeAPNs: Sendable {
    struct Sent: Sendable {
        let token: String
        let title: String
        let body: String
        let badge: Int
        let collapseId: String
        let data: [String: String]
    }

    let teamId = "TEAM123456"
    let keyId = "KEY1234567"
    let topic = "com.example.chat"
    let keyPEM: String  // the .p8 key push signs with
    let caPEM: String  // what push trusts
    let unregistered: Set<String>
    let accepted = Locked<[Sent]>([])
    let refused = Locked<[String]>([])  // "<status> <reason>"
    private let channel: any Channel

    init(unregistered: Set<String> = []) async throws {
        self.unregistered = unregistered
        let signingKey = P256.Signing.PrivateKey()
        keyPEM = signingKey.pemRepresentation
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(pem: signingKey.publicKey.pemRepresentation), kid: JWKIdentifier(string: keyId))

        // A CA and the server's certificate for 127.0.0.1, both valid for an hour.
        let caKey = P256.Signing.PrivateKey()
        let serverKey = P256.Signing.PrivateKey()
        let now = Date()
        let caName = try DistinguishedName { CommonName("chatsuite test CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey), notValidBefore: now - 3_600, notValidAfter: now + 3_600,
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(caKey))
        let server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(serverKey.publicKey), notValidBefore: now - 3_600, notValidAfter: now + 3_600,
            issuer: caName, subject: try DistinguishedName { CommonName("127.0.0.1") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
                try ExtendedKeyUsage([.serverAuth])
            }, issuerPrivateKey: .init(caKey))
        caPEM = try ca.serializeAsPEM().pemString
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(try server.serializeAsPEM().pemString.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)

        let state = Recorder(keys: keys, teamId: teamId, keyId: keyId, topic: topic, unregistered: unregistered, accepted: accepted, refused: refused)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2Pipeline(mode: .server) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([HTTP2FramePayloadToHTTP1ServerCodec(), RequestHandler(recorder: state)])
                        }
                    }.map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var url: String { "https://127.0.0.1:\(channel.localAddress?.port ?? 0)" }

    func stop() async { try? await channel.close() }

    func sent(to token: String) -> [Sent] { accepted.value.filter { $0.token == token } }

    /// Checks and records requests (shared by every stream).
    struct Recorder: Sendable {
        let keys: JWTKeyCollection
        let teamId: String
        let keyId: String
        let topic: String
        let unregistered: Set<String>
        let accepted: Locked<[Sent]>
        let refused: Locked<[String]>

        struct Claims: JWTPayload {
            var iss: String
            var iat: Double
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }

        func answer(_ head: HTTPRequestHead, _ body: ByteBuffer) async -> (HTTPResponseStatus, String) {
            let refuse = { (status: HTTPResponseStatus, reason: String) -> (HTTPResponseStatus, String) in
                refused.withLock { $0.append("\(status.code) \(reason)") }
                return (status, #"{"reason":"\#(reason)"}"#)
            }
            guard head.method == .POST, head.uri.hasPrefix("/3/device/") else { return refuse(.notFound, "BadPath") }
            let token = String(head.uri.dropFirst("/3/device/".count))
            let authorization = head.headers.first(name: "authorization") ?? ""
            guard authorization.hasPrefix("bearer "), let claims = try? await keys.verify(String(authorization.dropFirst(7)), as: Claims.self),
                claims.iss == teamId, abs(claims.iat - Date().timeIntervalSince1970) < 3_600
            else { return refuse(.forbidden, "InvalidProviderToken") }
            guard head.headers.first(name: "apns-topic") == topic else { return refuse(.badRequest, "TopicDisallowed") }
            guard head.headers.first(name: "apns-push-type") == "alert", let collapse = head.headers.first(name: "apns-collapse-id"), collapse.utf8.count <= 64
            else { return refuse(.badRequest, "BadHeaders") }
            guard token.utf8.count == 64, token.allSatisfy(\.isHexDigit) else { return refuse(.badRequest, "BadDeviceToken") }
            if unregistered.contains(token) { return refuse(.gone, "Unregistered") }
            guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any], let aps = object["aps"] as? [String: Any],
                let alert = aps["alert"] as? [String: Any], let title = alert["title"] as? String, let text = alert["body"] as? String,
                let badge = aps["badge"] as? Int
            else { return refuse(.badRequest, "PayloadEmpty") }
            let data = object.filter { $0.key != "aps" }.compactMapValues { $0 as? String }
            accepted.withLock { $0.append(Sent(token: token, title: title, body: text, badge: badge, collapseId: collapse, data: data)) }
            return (.ok, "")
        }
    }

    /// One HTTP/2 stream, seen as an HTTP/1 request: collected, answered.
    final class RequestHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let recorder: Recorder
        private var head: HTTPRequestHead?
        private var body = ByteBuffer()

        init(recorder: Recorder) { self.recorder = recorder }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body(var chunk): body.writeBuffer(&chunk)
            case .end:
                guard let head else { return }
                let (recorder, body) = (self.recorder, self.body)
                let loop = context.eventLoop
                let bound = NIOLoopBound(context, eventLoop: loop)
                Task {
                    let (status, text) = await recorder.answer(head, body)
                    loop.execute {
                        let context = bound.value
                        var headers = HTTPHeaders()
                        headers.add(name: "content-length", value: "\(text.utf8.count)")
                        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
                        if !text.isEmpty { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil) }
                        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                    }
                }
            }
        }
    }
}
