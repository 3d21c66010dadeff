import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import Messaging
import PostgresNIO
import ServiceCatalog
import SuiteTesting
import Testing
import TestSupport

/// The push service learns device tokens from `auth.user.v1`: an event when a token becomes a
/// user's, none when a login repeats it, a removal when another account signs in on the device
/// or at logout. The table and the events agree (one transaction).
@Suite("Device tokens on auth.user.v1", .serialized)
struct DeviceTokenEventTests {
    /// A device-token event as (type, user, tokens).
    struct Seen: Equatable, CustomStringConvertible {
        let type: String
        let tokens: [String]
        var description: String { "\(type) \(tokens)" }
    }

    static func join(_ s: Stack, _ name: String, deviceToken: String?) async throws -> AuthResultBody {
        let token = deviceToken.map { #","deviceToken":"\#($0)""# } ?? ""
        let response = try await s.request(
            .post, "/v1/users/join", json: #"{"email":"\#(name)@example.com","password":"correct horse 1","nickname":"\#(name)"\#(token)}"#)
        #expect(response.status == .ok)
        return try decode(AuthResultBody.self, response)
    }

    @Test("join, repeated login, token moving to another account, logout: each change once, in order, per user")
    func lifecycle() async throws {
        try await Stack.run { s in
            let a = try await Self.join(s, "devicea", deviceToken: "tok-a1")
            // Logging in again from the same device is no change.
            let login = try await s.request(
                .post, "/v1/users/login", json: #"{"email":"devicea@example.com","password":"correct horse 1","deviceToken":"tok-a1"}"#)
            #expect(login.status == .ok)
            #expect(try await s.request(.put, "/v1/users/deviceToken", token: a.token.accessToken, json: #"{"deviceToken":"tok-shared"}"#).status == .ok)
            #expect(try await s.request(.post, "/v1/users/deviceToken", token: a.token.accessToken, json: #"{"deviceToken":"tok-shared"}"#).status == .ok)
            // Another account signs in on the shared device: the token moves to it.
            let b = try await Self.join(s, "deviceb", deviceToken: nil)
            let bLogin = try await s.request(
                .post, "/v1/users/login", json: #"{"email":"deviceb@example.com","password":"correct horse 1","deviceToken":"tok-shared"}"#)
            #expect(bLogin.status == .ok)
            #expect(try await s.request(.post, "/v1/users/logout", token: a.token.accessToken).status == .ok)

            let consumer = try TestKafka.groupConsumer(s.cluster, group: "test-\(UUID())", topics: [Topic.authUser.name])
            let seen = try await withTimeout(.seconds(30), "device-token events") { () -> [String: [Seen]] in
                var seen: [String: [Seen]] = [:]
                for try await message in consumer.messages {
                    guard let key = message.keyString, let value = message.value else { continue }
                    switch message.cloudEventType {
                    case AuthEvents.DeviceTokenAdded.eventType:
                        let event = try EventCoding.decode(AuthEvents.DeviceTokenAdded.self, from: value)
                        #expect(event.data.userId.description == key)
                        seen[key, default: []].append(Seen(type: "added", tokens: [event.data.token]))
                    case AuthEvents.DeviceTokensRemoved.eventType:
                        let event = try EventCoding.decode(AuthEvents.DeviceTokensRemoved.self, from: value)
                        #expect(event.data.userId.description == key)
                        seen[key, default: []].append(Seen(type: "removed", tokens: event.data.tokens))
                    default:
                        continue
                    }
                    // B's single event and A's four; anything more (a login repeating a token,
                    // a second POST of one) would sit among A's and break the order below.
                    if seen[a.user_id, default: []].count >= 4, seen[b.user_id, default: []].count >= 1 { break }
                }
                return seen
            }
            await consumer.close()
            #expect(
                seen[a.user_id] == [
                    Seen(type: "added", tokens: ["tok-a1"]), Seen(type: "added", tokens: ["tok-shared"]),
                    Seen(type: "removed", tokens: ["tok-shared"]), Seen(type: "removed", tokens: ["tok-a1"]),
                ])
            #expect(seen[b.user_id] == [Seen(type: "added", tokens: ["tok-shared"])])

            // The table agrees: the shared token is B's alone, A has none.
            let auth = try #require(s.databases[ServiceEntry.auth.name])
            var owners: [String: [UUID]] = [:]
            for try await (token, user) in try await auth.query("SELECT token, user_id FROM device_tokens ORDER BY token").decode((String, UUID).self) {
                owners[token, default: []].append(user)
            }
            #expect(owners == ["tok-shared": [try #require(UUID(uuidString: b.user_id))]])
        }
    }
}

extension DeviceTokenEventTests {
    @Test("a client registering token after token keeps only the 10 latest: the table stays bounded, the dropped ones are announced")
    func perUserCap() async throws {
        try await Stack.run { s in
            let user = try await Self.join(s, "manydevices", deviceToken: nil)
            for i in 0..<14 {
                let body = #"{"deviceToken":"tok-\#(String(format: "%02d", i))"}"#
                #expect(try await s.request(.put, "/v1/users/deviceToken", token: user.token.accessToken, json: body).status == .ok)
            }
            let auth = try #require(s.databases[ServiceEntry.auth.name])
            var kept: [String] = []
            for try await token in try await auth.query("SELECT token FROM device_tokens ORDER BY token").decode(String.self) { kept.append(token) }
            #expect(kept == (4..<14).map { String(format: "tok-%02d", $0) })

            let consumer = try TestKafka.groupConsumer(s.cluster, group: "test-\(UUID())", topics: [Topic.authUser.name])
            let removed = try await withTimeout(.seconds(30), "removal events") { () -> [String] in
                var removed: [String] = []
                for try await message in consumer.messages where message.keyString == user.user_id {
                    guard message.cloudEventType == AuthEvents.DeviceTokensRemoved.eventType, let value = message.value else { continue }
                    removed += try EventCoding.decode(AuthEvents.DeviceTokensRemoved.self, from: value).data.tokens
                    if removed.count >= 4 { break }
                }
                return removed
            }
            await consumer.close()
            #expect(removed == ["tok-00", "tok-01", "tok-02", "tok-03"])
        }
    }
}
