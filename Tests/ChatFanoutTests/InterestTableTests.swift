@testable import ChatFanoutApp
import Foundation
import Testing

@Suite("Interest table")
struct InterestTableTests {
    @Test("the latest state per (gateway, conversation) wins; repeated states change nothing")
    func latestWins() {
        let table = InterestTable()
        let (c1, c2) = (UUID(), UUID())
        #expect(table.apply(gatewayId: "g1", conversationId: c1, interested: true))
        #expect(!table.apply(gatewayId: "g1", conversationId: c1, interested: true))
        #expect(table.apply(gatewayId: "g2", conversationId: c1, interested: true))
        #expect(table.apply(gatewayId: "g1", conversationId: c2, interested: true))
        #expect(table.gateways(for: [[c1], [c2], [UUID()], nil]) == [["g1", "g2"], ["g1"], [], []])
        // A presence change names several workspaces: every gateway interested in any of them, once.
        #expect(table.gateways(for: [[c1, c2, UUID()]]) == [["g1", "g2"]])
        #expect(table.entryCount == 3)

        #expect(table.apply(gatewayId: "g1", conversationId: c1, interested: false))
        #expect(!table.apply(gatewayId: "g1", conversationId: c1, interested: false))
        #expect(!table.apply(gatewayId: "g3", conversationId: c2, interested: false))
        #expect(table.gateways(for: [[c1], [c2]]) == [["g2"], ["g1"]])
        #expect(table.entryCount == 2)
    }

    @Test("tombstone keys: `<gateway>/<conversation>`, the gateway id may contain slashes")
    func keys() throws {
        let id = UUID()
        let key = try #require(InterestKey("gw/eu/1/\(id.uuidString.lowercased())"))
        #expect(key.gatewayId == "gw/eu/1")
        #expect(key.conversationId == id)
        #expect(InterestKey("gateway-without-conversation") == nil)
        #expect(InterestKey("gw/not-a-uuid") == nil)
        #expect(InterestKey("/\(id.uuidString)") == nil)
    }
}
