import Crypto
import Foundation
import SuiteTesting
import SwiftASN1
import X509

/// A stand-in for Apple's signing of StoreKit 2 transactions: a root, an intermediate and a leaf
/// made by the test (the leaf and intermediate carrying Apple's marker extensions), and
/// transactions signed as App Store JWS (ES256, `x5c` = leaf, intermediate, root).
struct FakeAppStore {
    struct Options {
        var leafMarker = true
        var leafValidFor: ClosedRange<Date> = Date(timeIntervalSinceNow: -3_600)...Date(timeIntervalSinceNow: 3_600)
    }

    let rootPEM: String
    private let chain: [Certificate]
    private let leafKey: P256.Signing.PrivateKey

    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    init(_ options: Options = Options()) throws {
        let now = Date()
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("Test Apple Root CA - G3") }
        let intermediateName = try DistinguishedName { CommonName("Test Apple Worldwide Developer Relations CA - G6") }
        let null: ArraySlice<UInt8> = [0x05, 0x00]
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 86_400, notValidAfter: now + 86_400,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(rootKey))
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: now - 86_400,
            notValidAfter: now + 86_400, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
                Certificate.Extension(oid: Self.intermediateMarker, critical: false, value: null)
            }, issuerPrivateKey: .init(rootKey))
        let leafMarker = options.leafMarker
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: options.leafValidFor.lowerBound,
            notValidAfter: options.leafValidFor.upperBound, issuer: intermediateName,
            subject: try DistinguishedName { CommonName("Test Prod ECC Mac App Store and iTunes Store Receipt Signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if leafMarker { Certificate.Extension(oid: Self.leafMarker, critical: false, value: null) }
            }, issuerPrivateKey: .init(intermediateKey))
        chain = [leaf, intermediate, root]
        rootPEM = try root.serializeAsPEM().pemString
    }

    /// A signed transaction with these payload fields (merged over a valid production purchase).
    func transaction(_ fields: [String: Any], alg: String = "ES256") throws -> String {
        var payload: [String: Any] = [
            "transactionId": "2000000\(Int.random(in: 100_000_000...999_999_999))", "originalTransactionId": "2000000100000001",
            "bundleId": "com.memolease.sesac1", "productId": "com.memolease.sesac1.sprout1", "type": "Non-Consumable",
            "environment": "Production", "purchaseDate": Date().timeIntervalSince1970 * 1000, "signedDate": Date().timeIntervalSince1970 * 1000,
            "quantity": 1, "inAppOwnershipType": "PURCHASED",
        ]
        payload.merge(fields) { $1 }
        let x5c = try chain.map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": x5c])
        let input = try header.base64URL + "." + JSONSerialization.data(withJSONObject: payload).base64URL
        let signature = try leafKey.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + signature.base64URL
    }

    /// The root as a temporary PEM file (the service's `study.appstore-root-certificates-file`).
    func rootFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-root-\(UUID().uuidString).pem").path
        try Data(rootPEM.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
