import Foundation
import JWTKit
import SwiftASN1
import X509

/// What the shop reads from an App Store signed transaction (the JWS StoreKit 2 gives the app as
/// `jwsRepresentation`, the App Store Server API's `JWSTransaction`). Times are milliseconds.
struct AppStoreTransaction: JWTPayload, Equatable {
    var transactionId: String
    var originalTransactionId: String?
    var bundleId: String
    var productId: String
    var environment: String?
    var revocationDate: Double?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An item of the study app's store, by App Store product id (client contract §3.1):
/// `com.memolease.sesac1.sprout1…4` are faces (`sesac` 1–4), `…background1…7` backgrounds.
enum StudyShopItem: Equatable, Sendable {
    case sesac(Int)
    case background(Int)

    static let sesacs = 0...4
    static let backgrounds = 0...7
    private static let prefix = "com.memolease.sesac1."

    init?(productId: String) {
        guard productId.hasPrefix(Self.prefix) else { return nil }
        let name = productId.dropFirst(Self.prefix.count)
        if name.hasPrefix("sprout"), let n = Int(name.dropFirst("sprout".count)), (1...4).contains(n), name == "sprout\(n)" {
            self = .sesac(n)
        } else if name.hasPrefix("background"), let n = Int(name.dropFirst("background".count)), (1...7).contains(n), name == "background\(n)" {
            self = .background(n)
        } else {
            return nil
        }
    }
}

/// Checks App Store signed transactions as Apple documents: an ES256 JWS whose `x5c` chain (leaf,
/// Apple's intermediate, root) verifies up to a configured Apple root at the current time, whose
/// leaf and intermediate carry Apple's marker extensions, and whose signature is the leaf's; then
/// the bundle id, the environment, the product and that it was not revoked.
struct AppStoreVerifier: Sendable {
    enum Failure: Error, CustomStringConvertible {
        case notConfigured, malformed, algorithm(String), chain(String), bundle(String), environment(String), product(String), revoked

        var description: String {
            switch self {
            case .notConfigured: "no App Store root certificate is configured"
            case .malformed: "not a JWS with an x5c chain"
            case .algorithm(let alg): "algorithm \(alg), not ES256"
            case .chain(let reason): "certificate chain or signature: \(reason)"
            case .bundle(let id): "bundle id \(id)"
            case .environment(let environment): "environment \(environment)"
            case .product(let id): "product \(id)"
            case .revoked: "revoked"
            }
        }
    }

    private let verifier: X5CVerifier?
    let bundleId: String
    let environment: String

    /// - Parameter rootsPEM: the trusted roots (Apple Root CA - G3 in production); nil refuses every transaction.
    init(rootsPEM: String?, bundleId: String, environment: String) throws {
        if let rootsPEM {
            let roots = try PEMDocument.parseMultiple(pemString: rootsPEM).map { try Certificate(pemDocument: $0) }
            verifier = try X5CVerifier(rootCertificates: roots)
        } else {
            verifier = nil
        }
        self.bundleId = bundleId
        self.environment = environment
    }

    /// The verified transaction and the item it buys; `product` is what the app says it bought.
    func verify(_ jws: String, product: String) async throws(Failure) -> (AppStoreTransaction, StudyShopItem) {
        guard let verifier else { throw .notConfigured }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any], let x5c = header["x5c"] as? [Any], x5c.count >= 2
        else { throw .malformed }
        guard let alg = header["alg"] as? String, alg == "ES256" else { throw .algorithm("\(header["alg"] ?? "none")") }
        let transaction: AppStoreTransaction
        do {
            transaction = try await verifier.verifyJWS(Array(jws.utf8), as: AppStoreTransaction.self, jsonDecoder: .defaultForJWT) {
                AppleTransactionCertificates()
            }
        } catch {
            throw .chain("\(error)")
        }
        guard transaction.bundleId == bundleId else { throw .bundle(transaction.bundleId) }
        guard transaction.environment == environment else { throw .environment(transaction.environment ?? "none") }
        guard transaction.productId == product, let item = StudyShopItem(productId: transaction.productId) else {
            throw .product(transaction.productId)
        }
        guard transaction.revocationDate == nil else { throw .revoked }
        return (transaction, item)
    }

    private static func base64URL(_ part: Substring) -> Data? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text)
    }
}

/// Apple's marker extensions: the leaf of a signed transaction carries 1.2.840.113635.100.6.11.1,
/// its intermediate (Apple Worldwide Developer Relations) 1.2.840.113635.100.6.2.1.
struct AppleTransactionCertificates: VerifierPolicy {
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [Self.leafMarker, Self.intermediateMarker]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count >= 3 else { return .failsToMeetPolicy(reason: "a chain of \(certificates.count), not leaf, intermediate, root") }
        guard certificates[0].extensions[oid: Self.leafMarker] != nil else { return .failsToMeetPolicy(reason: "the leaf lacks Apple's marker") }
        guard certificates[1].extensions[oid: Self.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks Apple's marker")
        }
        return .meetsPolicy
    }
}
