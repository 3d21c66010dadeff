import Events
import Foundation
import Testing

@Suite("CloudEvents envelope")
struct CloudEventTests {
    static var datePattern: Regex<Substring> { #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/# }

    @Test func userRegisteredRoundTrips() throws {
        let data = AuthEvents.UserRegistered(
            userId: UserID.generate(), email: "a@b.c", nickname: "새싹", profileImage: nil, provider: "email", createdAt: Date()
        )
        let event = CloudEvent(source: "auth", data: data)
        let bytes = try EventCoding.encode(event)
        let decoded = try EventCoding.decode(AuthEvents.UserRegistered.self, from: bytes)
        #expect(decoded == event)
        #expect(decoded.data.nickname == "새싹")
    }

    @Test func envelopeHasTheCloudEventsAttributes() throws {
        let userId = UserID.generate()
        let event = CloudEvent(source: "auth", data: AuthEvents.UserDeleted(userId: userId))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try EventCoding.encode(event))) as? [String: Any])
        #expect(object["specversion"] as? String == "1.0")
        #expect(object["type"] as? String == "auth.user.deleted")
        #expect(object["source"] as? String == "auth")
        #expect(object["subject"] as? String == userId.description)
        #expect(object["datacontenttype"] as? String == "application/json")
        #expect(object["dataschema"] as? String == EventSchemaLocation.baseURL + "/auth.user.deleted.json")
        let id = try #require(object["id"] as? String)
        #expect(id == id.lowercased() && UUID(uuidString: id) != nil)
        let time = try #require(object["time"] as? String)
        #expect(time.wholeMatch(of: Self.datePattern) != nil)
        #expect((object["data"] as? [String: Any])?["userId"] as? String == userId.description)
    }

    @Test func everyEventTypeRoundTrips() throws {
        let now = Timestamp.truncated(Date())
        let user = UserID.generate()
        try roundTrip(AuthEvents.UserRegistered(userId: user, email: "x@y.z", nickname: "n", profileImage: "/v1/static/a.jpg", provider: nil, createdAt: now))
        try roundTrip(AuthEvents.UserProfileUpdated(userId: user, email: "x@y.z", nickname: "m", profileImage: nil))
        try roundTrip(AuthEvents.UserDeleted(userId: user))
        try roundTrip(GatewayEvents.SessionOpened(sessionId: "s1", gatewayId: "g1", userId: user, clientProtocol: .socketIO, openedAt: now))
        try roundTrip(GatewayEvents.SessionClosed(sessionId: "s1", gatewayId: "g1", userId: nil, closedAt: now))
    }

    private func roundTrip<P: EventPayload>(_ payload: P, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let event = CloudEvent(source: "test", data: payload)
        let decoded = try EventCoding.decode(P.self, from: try EventCoding.encode(event))
        #expect(decoded == event, sourceLocation: sourceLocation)
        #expect(event.type == P.eventType && event.subject == payload.subject, sourceLocation: sourceLocation)
        #expect(P.topic.name.hasSuffix(".v1"), sourceLocation: sourceLocation)
    }

    @Test func decodingAsTheWrongTypeFails() throws {
        let bytes = try EventCoding.encode(CloudEvent(source: "auth", data: AuthEvents.UserDeleted(userId: UserID.generate())))
        #expect(throws: DecodingError.self) { try EventCoding.decode(AuthEvents.UserRegistered.self, from: bytes) }
    }

    @Test func headerDecodesWithoutKnowingTheType() throws {
        let event = CloudEvent(source: "gateway", data: GatewayEvents.SessionClosed(sessionId: "s", gatewayId: "g", userId: nil, closedAt: Date()))
        let header = try EventCoding.header(from: try EventCoding.encode(event))
        #expect(header.id == event.id)
        #expect(header.type == "gateway.session.closed")
        #expect(header.subject == "s")
    }

    @Test func rejectsOtherSpecVersions() {
        let json =
            #"{"specversion":"0.3","id":"0190a0a0-0000-7000-8000-000000000000","source":"x","type":"auth.user.deleted","time":"2024-01-01T00:00:00.000Z","subject":"s","data":{"userId":"0190a0a0-0000-7000-8000-000000000000"}}"#
        #expect(throws: DecodingError.self) { try EventCoding.decode(AuthEvents.UserDeleted.self, from: Array(json.utf8)) }
    }
}

@Suite("Topic catalog")
struct TopicCatalogTests {
    @Test func namesAreUniqueAndVersioned() {
        let names = Topic.catalog.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.hasSuffix(".v1") })
    }

    @Test func sessionInterestAndPresenceAreCompacted() {
        let compacted = Set(Topic.catalog.filter { $0.cleanupPolicy == .compact }.map(\.name))
        #expect(compacted == ["gateway.session.v1", "gateway.interest.v1", "presence.v1"])
    }
}

@Suite("Typed identifiers")
struct IdentifierTests {
    @Test func encodeLowerCaseDecodeAnyCase() throws {
        let id = try #require(UserID("0190A0A0-0000-7000-8000-00000000ABCD"))
        let json = String(decoding: try JSONEncoder().encode([id]), as: UTF8.self)
        #expect(json == #"["0190a0a0-0000-7000-8000-00000000abcd"]"#)
        #expect(try JSONDecoder().decode([UserID].self, from: Data(json.uppercased().utf8)) == [id])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([UserID].self, from: Data(#"["nope"]"#.utf8)) }
    }
}
