import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1

/// Verifies Firebase ID tokens: RS256, signed by a key of Google's secure-token key set (a JWKS,
/// fetched from a configurable URL and cached by `kid`; a token naming an unknown `kid` makes it
/// fetch the set again, at most once per `minimumRefetchInterval`), `aud` = the Firebase project,
/// `iss` = `https://securetoken.google.com/<project>`, `exp` in the future, `iat` and `auth_time`
/// not in the future (each within `leeway`), `sub` (the uid) 1–128 characters.
///
/// Only RS256 keys of the set are kept, so `alg: none`, HMAC with a public key and other
/// algorithm confusions never verify.
public actor FirebaseTokenVerifier {
    public let projectId: String
    public let keySetURL: String
    public let minimumRefetchInterval: Duration
    public let leeway: TimeInterval
    private let client: HTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    /// Time since an arbitrary start, for the refetch interval (tests pass a clock they move).
    private let uptime: @Sendable () -> Duration
    private var keys = JWTKeyCollection()
    private var kids: Set<String> = []
    private var lastFetch: Duration?
    /// A fetch in progress, which concurrent callers wait for instead of fetching again.
    private var fetching: Task<Void, any Error>?

    /// The largest key set read (Google's is about 2 KiB).
    static let maxKeySetBytes = 256 * 1024

    public init(
        projectId: String, keySetURL: String, client: HTTPClient, logger: Logger, minimumRefetchInterval: Duration = .seconds(60),
        leeway: TimeInterval = 5, now: @escaping @Sendable () -> Date = { Date() },
        uptime: @escaping @Sendable () -> Duration = { ContinuousClock.now - FirebaseTokenVerifier.start }
    ) {
        self.uptime = uptime
        self.projectId = projectId
        self.keySetURL = keySetURL
        self.client = client
        self.logger = logger
        self.minimumRefetchInterval = minimumRefetchInterval
        self.leeway = leeway
        self.now = now
    }

    /// The process's reference point for `uptime`.
    public static let start = ContinuousClock.now

    public static func issuer(of project: String) -> String { "https://securetoken.google.com/\(project)" }

    /// The identity the token names, or why it does not verify.
    public func verify(_ token: String) async throws(FirebaseTokenError) -> FirebaseIdentity {
        guard token.utf8.count <= 8192, let header = Self.header(of: token), header.alg == "RS256", let kid = header.kid, !kid.isEmpty else {
            throw .malformed
        }
        if !kids.contains(kid) { try await refetch() }
        guard kids.contains(kid) else { throw .unknownKey }
        let claims: FirebaseIDToken
        do {
            claims = try await keys.verify(token, as: FirebaseIDToken.self)
        } catch {
            throw .badSignature
        }
        return try check(claims)
    }

    private func check(_ claims: FirebaseIDToken) throws(FirebaseTokenError) -> FirebaseIdentity {
        let now = now()
        guard claims.aud.value == [projectId] else { throw .invalidClaims("aud") }
        guard claims.iss.value == Self.issuer(of: projectId) else { throw .invalidClaims("iss") }
        guard claims.exp.value.addingTimeInterval(leeway) > now else { throw .invalidClaims("exp") }
        guard claims.iat.value.addingTimeInterval(-leeway) <= now else { throw .invalidClaims("iat") }
        let authTime = Date(timeIntervalSince1970: claims.auth_time)
        guard authTime.addingTimeInterval(-leeway) <= now else { throw .invalidClaims("auth_time") }
        let uid = claims.sub.value
        guard !uid.isEmpty, uid.count <= 128 else { throw .invalidClaims("sub") }
        return FirebaseIdentity(uid: uid, phoneNumber: claims.phone_number, authTime: authTime)
    }

    /// Fetches the key set unless it was fetched less than `minimumRefetchInterval` ago; callers
    /// arriving during a fetch share it.
    private func refetch() async throws(FirebaseTokenError) {
        if let fetching {
            do { try await fetching.value } catch { throw .keySetUnavailable("\(error)") }
            return
        }
        if let lastFetch, uptime() - lastFetch < minimumRefetchInterval { return }
        lastFetch = uptime()
        let task = Task { try await self.load() }
        fetching = task
        defer { fetching = nil }
        do {
            try await task.value
        } catch {
            logger.warning("Firebase key set not fetched", metadata: ["url": "\(keySetURL)", "error": "\(error)"])
            throw .keySetUnavailable("\(error)")
        }
    }

    private func load() async throws {
        let response = try await client.execute(HTTPClientRequest(url: keySetURL), timeout: .seconds(5))
        guard response.status == .ok else { throw FirebaseTokenError.keySetUnavailable("HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: Self.maxKeySetBytes)
        let set = try JSONDecoder().decode(JWKS.self, from: Data(body.readableBytesView))
        let fresh = JWTKeyCollection()
        var found: Set<String> = []
        for key in set.keys where key.keyType == .rsa && (key.algorithm == nil || key.algorithm == JWK.Algorithm.rs256) {
            guard let kid = key.keyIdentifier?.string else { continue }
            var pinned = key
            pinned.algorithm = JWK.Algorithm.rs256
            try await fresh.add(jwk: pinned)
            found.insert(kid)
        }
        keys = fresh
        kids = found
    }

    /// The token's header, unverified (`alg` and `kid` pick the key).
    private static func header(of token: String) -> (alg: String?, kid: String?)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[0])),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (object["alg"] as? String, object["kid"] as? String)
    }
}

extension Data {
    /// Base64url without padding, as JWTs write it.
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
