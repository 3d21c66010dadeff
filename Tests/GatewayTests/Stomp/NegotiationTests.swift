import Testing

@testable import GatewayApp

@Suite("Heart-beat and version negotiation")
struct NegotiationTests {
    @Test func parsesHeartBeatHeader() throws {
        #expect(try StompHeartBeat(headerValue: nil) == .none)
        #expect(try StompHeartBeat(headerValue: "0,0") == .none)
        #expect(try StompHeartBeat(headerValue: "10000,5000") == StompHeartBeat(sendInterval: 10_000, receiveInterval: 5_000))
        #expect(try StompHeartBeat(headerValue: " 100 , 200 ") == StompHeartBeat(sendInterval: 100, receiveInterval: 200))
        #expect(StompHeartBeat(sendInterval: 1, receiveInterval: 2).headerValue == "1,2")
    }

    @Test(arguments: ["", "1", "1,", ",1", "1,2,3", "a,b", "-1,0", "1;2", "1.5,2", "99999999999,0", "2147483648,0"])
    func rejectsMalformedHeartBeat(value: String) {
        #expect(throws: StompParseError.invalidHeartBeat(value)) { try StompHeartBeat(headerValue: value) }
    }

    @Test(
        arguments: [
            // (cx, cy), (sx, sy), serverSendEvery, clientExpectedEvery
            ((0, 0), (10_000, 10_000), nil, nil),
            ((10_000, 10_000), (0, 0), nil, nil),
            ((10_000, 10_000), (10_000, 10_000), 10_000, 10_000),
            ((5_000, 20_000), (10_000, 10_000), 20_000, 10_000),
            ((30_000, 1_000), (10_000, 10_000), 10_000, 30_000),
            ((0, 4_000), (10_000, 10_000), 10_000, nil),
            ((4_000, 0), (10_000, 10_000), nil, 10_000),
            ((4_000, 4_000), (10_000, 0), 10_000, nil),
            ((4_000, 4_000), (0, 10_000), nil, 10_000),
        ] as [((Int, Int), (Int, Int), Int?, Int?)])
    func negotiatesHeartBeating(client: (Int, Int), server: (Int, Int), serverSends: Int?, clientSends: Int?) {
        let schedule = StompHeartBeat.negotiate(
            client: StompHeartBeat(sendInterval: client.0, receiveInterval: client.1),
            server: StompHeartBeat(sendInterval: server.0, receiveInterval: server.1)
        )
        #expect(schedule == StompHeartBeatSchedule(serverSendEvery: serverSends, clientExpectedEvery: clientSends))
    }

    @Test(
        arguments: [
            (nil, nil),
            ("", nil),
            ("1.0", nil),
            ("1.3", nil),
            ("1.2.0", nil),
            ("1.1", .v1_1),
            ("1.0,1.1", .v1_1),
            ("1.2", .v1_2),
            ("1.1,1.2", .v1_2),
            ("1.0,1.1,1.2", .v1_2),
            ("1.2,1.0", .v1_2),
            (" 1.1 , 1.2 ", .v1_2),
        ] as [(String?, StompVersion?)])
    func negotiatesVersion(acceptVersion: String?, expected: StompVersion?) {
        #expect(StompVersion.negotiate(acceptVersion: acceptVersion) == expected)
    }
}
