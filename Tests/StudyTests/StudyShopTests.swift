import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import SuiteTesting
import Testing

/// The study app's shop (client contract §3.1): wearing owned items, and in-app purchases as App
/// Store signed transactions checked against a test root — the chain, Apple's markers, the
/// signature, the bundle, the environment, the product — each granting its item once.
@Suite("Study shop through the gateway")
struct StudyShopTests {
    typealias T = StudyUserTests
    typealias Q = StudyQueueTests

    static func buy(_ s: Stack, _ who: StudyPerson, _ receipt: String, product: String = "com.memolease.sesac1.sprout1") async throws -> Int {
        let form = "receipt=\(receipt.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&product=\(product)"
        return Int(try await T.call(s, .post, "/v1/user/shop/ios", token: who.token, form: form).status.code)
    }

    @Test("a purchase grants its face or background once per transaction; item wears owned ones only (201 otherwise)")
    func purchaseAndWear() async throws {
        let store = try FakeAppStore()
        try await T.withStudy(services: ["STUDY_APPSTORE_ROOT_CERTIFICATES_FILE": try store.rootFile()]) { s, key in
            let a = try await Q.person(s, key, nick: "구매자")
            let b = try await Q.person(s, key, nick: "다른")
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=0&background=0") == 200)
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=2&background=0") == 201, "not owned")
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=0&background=3") == 201, "not owned")

            let face = try store.transaction(["transactionId": "2000000111", "productId": "com.memolease.sesac1.sprout2"])
            #expect(try await Self.buy(s, a, face, product: "com.memolease.sesac1.sprout2") == 200)
            #expect(try await Self.buy(s, a, face, product: "com.memolease.sesac1.sprout2") == 201, "a transaction grants once")
            #expect(try await Self.buy(s, b, face, product: "com.memolease.sesac1.sprout2") == 201, "and to one user")
            let scene = try store.transaction(["transactionId": "2000000112", "productId": "com.memolease.sesac1.background7"])
            #expect(try await Self.buy(s, a, scene, product: "com.memolease.sesac1.background7") == 200)

            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=2&background=7") == 200)
            let info = try await Q.json(s, .get, "/v1/user/shop/myinfo", a)
            #expect(info["sesac"] as? Int == 2 && info["background"] as? Int == 7)
            #expect(info["sesacCollection"] as? [Int] == [0, 2] && info["backgroundCollection"] as? [Int] == [0, 7])
            #expect(info["transactionId"] as? [String] == ["2000000111", "2000000112"])
            let other = try await Q.json(s, .get, "/v1/user/shop/myinfo", b)
            #expect(other["sesacCollection"] as? [Int] == [0] && other["transactionId"] as? [String] == [])

            // The item is visible to others through search.
            #expect(try await Q.queue(s, a) == 200)
            let seen = try await Q.search(s, b).near.first { $0["uid"] as? String == a.uid }
            #expect(seen?["sesac"] as? Int == 2 && seen?["background"] as? Int == 7)
        }
    }

    @Test(
        "refused purchases are 201: another root, no Apple marker, an expired leaf, a forged signature, another alg, bundle, environment, product, revoked, garbage; 501 and 406"
    )
    func refusedPurchases() async throws {
        let store = try FakeAppStore()
        let stranger = try FakeAppStore()
        let unmarked = try FakeAppStore(.init(leafMarker: false))
        let expired = try FakeAppStore(.init(leafValidFor: Date(timeIntervalSinceNow: -7_200)...Date(timeIntervalSinceNow: -3_600)))
        // The service trusts the roots of `store`, `unmarked` and `expired`, not `stranger`'s.
        let roots = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-roots-\(UUID().uuidString).pem").path
        try Data((store.rootPEM + unmarked.rootPEM + expired.rootPEM).utf8).write(to: URL(fileURLWithPath: roots))
        try await T.withStudy(services: ["STUDY_APPSTORE_ROOT_CERTIFICATES_FILE": roots]) { s, key in
            let a = try await Q.person(s, key, nick: "구매자")
            let valid = try store.transaction([:])
            let parts = valid.split(separator: ".").map(String.init)
            let forgedPayload = try JSONSerialization.data(withJSONObject: [
                "transactionId": "1", "bundleId": "com.memolease.sesac1", "productId": "com.memolease.sesac1.sprout1", "environment": "Production",
            ]).base64URL
            for (name, receipt, product) in [
                ("another root", try stranger.transaction([:]), "com.memolease.sesac1.sprout1"),
                ("no Apple marker", try unmarked.transaction([:]), "com.memolease.sesac1.sprout1"),
                ("an expired leaf", try expired.transaction([:]), "com.memolease.sesac1.sprout1"),
                ("a forged payload", parts[0] + "." + forgedPayload + "." + parts[2], "com.memolease.sesac1.sprout1"),
                ("ES384 claimed", try store.transaction([:], alg: "ES384"), "com.memolease.sesac1.sprout1"),
                (
                    "alg none", Data(#"{"alg":"none"}"#.utf8).base64URL + "." + parts[1] + ".",
                    "com.memolease.sesac1.sprout1"
                ),
                ("another bundle", try store.transaction(["bundleId": "com.example.other"]), "com.memolease.sesac1.sprout1"),
                ("sandbox", try store.transaction(["environment": "Sandbox"]), "com.memolease.sesac1.sprout1"),
                ("another product than claimed", try store.transaction(["productId": "com.memolease.sesac1.sprout4"]), "com.memolease.sesac1.sprout1"),
                ("not a store product", try store.transaction(["productId": "com.memolease.sesac1.sprout9"]), "com.memolease.sesac1.sprout9"),
                ("revoked", try store.transaction(["revocationDate": Date().timeIntervalSince1970 * 1000]), "com.memolease.sesac1.sprout1"),
                ("garbage", "not-a-jws", "com.memolease.sesac1.sprout1"),
                ("base64 receipt", Data("MIIT…receipt".utf8).base64EncodedString(), "com.memolease.sesac1.sprout1"),
            ] {
                #expect(try await Self.buy(s, a, receipt, product: product) == 201, "\(name)")
            }
            #expect(try await Q.json(s, .get, "/v1/user/shop/myinfo", a)["sesacCollection"] as? [Int] == [0], "nothing was granted")
            #expect(try await Q.code(s, .post, "/v1/user/shop/ios", a, form: "product=com.memolease.sesac1.sprout1") == 501)
            #expect(try await Q.code(s, .post, "/v1/user/shop/ios", a, form: "receipt=x") == 501)
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=5&background=0") == 501)
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", a, form: "sesac=0") == 501)
            let stranger = StudyPerson(uid: "uid-nobody", token: try await key.token(uid: "uid-nobody", project: T.project), nick: "")
            #expect(try await Self.buy(s, stranger, valid) == 406)
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", stranger, form: "sesac=0&background=0") == 406)
            #expect(try await Self.buy(s, a, valid) == 200, "the valid one still works")
        }
    }

    @Test("without a configured App Store root every purchase is refused (201)")
    func notConfigured() async throws {
        let store = try FakeAppStore()
        try await T.withStudy { s, key in
            let a = try await Q.person(s, key, nick: "구매자")
            #expect(try await Self.buy(s, a, try store.transaction([:])) == 201)
        }
    }
}
