import Testing

@testable import GatewayApp

@Suite("Destinations")
struct DestinationTests {
    static let uuid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

    @Test(arguments: [
        ("/topic/group/\(uuid)", StompTopic.group(uuid)),
        ("/topic/direct/42", .direct("42")),
        ("/topic/community/Abc-9", .community("Abc-9")),
        ("/topic/\(uuid)", .room(uuid)),
        ("/topic/\(String(repeating: "a", count: 64))", .room(String(repeating: "a", count: 64))),
    ])
    func parsesTopics(destination: String, expected: StompTopic) {
        #expect(StompTopic(destination: destination) == expected)
        #expect(expected.destination == destination)
        #expect(StompDestination(destination) == .topic(expected))
    }

    @Test(arguments: [
        "/topic/", "/topic", "/topic/group/", "/topic//1", "/topic/group//1",
        "/topic/group/../1", "/topic/../group/1", "/topic/..", "/topic/group/%2e%2e",
        "/topic/group/1/", "/topic/group/a/b", "/topic/channel/1",
        "/topic/group", "/topic/direct", "/topic/community",
        "/topic/group/\(String(repeating: "a", count: 65))",
        "/topic/group/ábc", "/topic/gróup/1", "/topic/group/１２３", "/topic/\u{212A}",
        "/topic/group/a_b", "/topic/group/1 ", " /topic/group/1", "/Topic/group/1", "topic/group/1",
        "/topic/group/1\0", "/topic/group/1\n", "",
    ])
    func rejectsInvalidTopics(destination: String) {
        #expect(StompTopic(destination: destination) == nil)
    }

    @Test func parsesEverySendDestinationAndRoundTrips() {
        var cases: [StompSend] = [.joinChannel, .communitySignaling]
        for kind in StompConversationKind.allCases {
            cases += [.message(kind), .modify(kind), .delete(kind), .typing(kind), .reply(kind)]
        }
        #expect(Set(cases.map(\.destination)).count == 12)
        for send in cases {
            #expect(StompSend(destination: send.destination) == send)
        }
        #expect(StompSend(destination: "/kafka/send-direct-typing") == .typing(.direct))
        #expect(StompSend(destination: "/kafka/send-channel-reply") == .reply(.channel))
        #expect(StompSend(destination: "/kafka/join-channel") == .joinChannel)
        #expect(StompSend(destination: "/kafka/community-signaling")?.kind == nil)
        #expect(StompDestination("/kafka/send-channel-message") == .send(.message(.channel)))
    }

    @Test(arguments: [
        "/kafka/", "/kafka/send-group-message", "/kafka/send-channel-messages", "/kafka/send-channel",
        "/kafka/send-channel-message-x", "/kafka/send--message", "/kafka/join-channel/",
        "/kafka/../kafka/join-channel", "/kafka/JOIN-CHANNEL", "/Kafka/join-channel", "/kafka/join-channel ",
        "/topic/kafka/join-channel", "/kafka/send-channel-mеssage",
    ])
    func rejectsInvalidSendDestinations(destination: String) {
        #expect(StompSend(destination: destination) == nil)
        #expect(StompDestination(destination) == nil)
    }

    @Test func validatesIdentifiers() {
        #expect(StompDestination.isValidIdentifier(Self.uuid))
        #expect(StompDestination.isValidIdentifier("123"))
        #expect(!StompDestination.isValidIdentifier(""))
        #expect(!StompDestination.isValidIdentifier("a.b"))
        #expect(!StompDestination.isValidIdentifier(String(repeating: "1", count: 65)))
    }
}
