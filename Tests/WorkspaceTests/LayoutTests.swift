import Foundation
import NIOCore
import HTTPTypes
import HummingbirdTesting
import SuiteTesting
import TestSupport
import Testing

/// Categories and channel order with the contract's "place after `next`, 0 = first" moves.
@Suite("Categories and reordering")
struct LayoutTests {
    /// The layout as the client sees it: categories in order, each with its channel ids in order.
    struct Layout: Equatable, CustomStringConvertible {
        var categories: [String]
        var channels: [String: [String]]
        var description: String { categories.map { "\($0.prefix(4)):\(channels[$0, default: []].map { $0.prefix(4) })" }.joined(separator: " ") }

        init(categories: [String], channels: [String: [String]]) {
            self.categories = categories
            self.channels = channels
        }

        init(_ tree: [[String: Any]]) {
            categories = tree.map { id($0, "category_id") }
            channels = Dictionary(
                uniqueKeysWithValues: tree.map { category in
                    (id(category, "category_id"), (category["channels"] as? [[String: Any]] ?? []).map { id($0, "channel_id") })
                })
        }

        /// The model of a move: remove, then insert after `next` (nil = first). Returns nil when
        /// the item is already there (the server answers E12 and changes nothing).
        static func move(_ item: String, after next: String?, in list: [String]) -> [String]? {
            if let index = list.firstIndex(of: item) {
                if let next, index > 0, list[index - 1] == next { return nil }
                if next == nil, index == 0 { return nil }
            }
            var result = list.filter { $0 != item }
            let at = next.flatMap { n in result.firstIndex(of: n).map { $0 + 1 } } ?? 0
            result.insert(item, at: at)
            return result
        }
    }

    func tree(_ s: Stack, _ wid: String, _ user: User) async throws -> Layout {
        Layout(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/categories", user))))
    }

    @Test("20 random channel and category moves keep a consistent order (model-checked, no cycles, nothing lost)")
    func randomMoves() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            for name in ["음성", "프로젝트"] {
                let created = try await s.send(.post, "/v1/workspaces/\(wid)/categories", owner, json: #"{"name":"\#(name)"}"#)
                #expect(created.status == .ok)
                #expect(Set(try #require(jsonObject(created)).keys) == ["category_id", "name", "channels"])
            }
            for i in 0..<5 { _ = try await s.createChannel(owner, in: wid, name: "c\(i)") }
            var model = try await tree(s, wid, owner)
            #expect(model.categories.count == 3 && model.channels[model.categories[0]]?.count == 6)
            let allChannels = Set(model.channels.values.flatMap { $0 })
            var generator = SplitMix64(state: 20261122)
            var moved = 0
            var refused = 0
            for step in 0..<20 {
                if Bool.random(using: &generator) {
                    // A channel, to a random place in a random category.
                    let channel = allChannels.sorted().randomElement(using: &generator)!
                    let from = model.categories.first { model.channels[$0, default: []].contains(channel) }!
                    let to = model.categories.randomElement(using: &generator)!
                    let candidates = model.channels[to, default: []].filter { $0 != channel }
                    let next = Int.random(in: 0...candidates.count, using: &generator) == 0 ? nil : candidates.randomElement(using: &generator)
                    let body = #"{"next":"\#(next ?? "0")","category_id":"\#(to)"}"#
                    let response = try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(channel)/location", owner, json: body)
                    let expected = Layout.move(channel, after: next, in: from == to ? model.channels[to, default: []] : candidates)
                    if let expected {
                        #expect(response.status == .ok, "step \(step): \(String(buffer: response.body))")
                        if from != to { model.channels[from] = model.channels[from, default: []].filter { $0 != channel } }
                        model.channels[to] = expected
                        #expect(Layout(try #require(jsonArray(response))) == model, "step \(step)")
                        moved += 1
                    } else {
                        #expect(outcome(response) == "400 E12", "step \(step)")
                        refused += 1
                    }
                } else {
                    let category = model.categories.randomElement(using: &generator)!
                    let others = model.categories.filter { $0 != category }
                    let next = Bool.random(using: &generator) ? nil : others.randomElement(using: &generator)
                    let response = try await s.send(.put, "/v1/workspaces/\(wid)/categories/\(category)/location", owner, json: #"{"next":"\#(next ?? "0")"}"#)
                    if let expected = Layout.move(category, after: next, in: model.categories) {
                        #expect(response.status == .ok, "step \(step): \(String(buffer: response.body))")
                        model.categories = expected
                        moved += 1
                    } else {
                        #expect(outcome(response) == "400 E12", "step \(step)")
                        refused += 1
                    }
                }
                let actual = try await tree(s, wid, owner)
                #expect(actual == model, "step \(step): \(actual) vs \(model)")
                // Every channel exactly once, no category lost.
                #expect(actual.channels.values.flatMap { $0 }.sorted() == allChannels.sorted())
                #expect(Set(actual.categories).count == 3)
            }
            #expect(moved + refused == 20 && moved > 0)
            // /channels lists in the same layout order.
            let flat = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).map { id($0, "channel_id") }
            #expect(flat == model.categories.flatMap { model.channels[$0, default: []] })
        }
    }

    @Test("invalid moves: next is itself or elsewhere (E11), unknown category (E13), not an id (E11)")
    func invalidMoves() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let other = id(try await s.createWorkspace(owner), "workspace_id")
            let a = id(try await s.createChannel(owner, in: wid, name: "a"), "channel_id")
            let foreign = id(try await s.createChannel(owner, in: other, name: "b"), "channel_id")
            let layout = try await tree(s, wid, owner)
            let uri = "/v1/workspaces/\(wid)/channels/\(a)/location"
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"next":"\#(a)"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"next":"\#(foreign)"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"next":"banana"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"next":0,"category_id":"\#(UUID().uuidString)"}"#)) == "400 E13")
            let general = layout.channels[layout.categories[0]]![0]
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"next":"\#(general)"}"#)) == "400 E12")  // already there
            #expect(try await tree(s, wid, owner) == layout)
        }
    }

    @Test("rename (E12 unchanged), create channel in a category, delete keeps channels (last category E15)")
    func categoryLifecycle() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let first = try await tree(s, wid, owner).categories[0]
            let second = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/categories", owner, json: #"{"name":"두번째"}"#)), "category_id")
            #expect(outcome(try await s.send(.put, "/v1/workspaces/\(wid)/categories/\(second)", owner, json: #"{"name":"두번째"}"#)) == "400 E12")
            #expect(jsonObject(try await s.send(.put, "/v1/workspaces/\(wid)/categories/\(second)", owner, json: #"{"name":"둘"}"#))?["name"] as? String == "둘")
            let placed = try await s.send(.post, "/v1/workspaces/\(wid)/channels", owner, json: #"{"name":"in-second","category_id":"\#(second)"}"#)
            #expect(placed.status == .ok)
            let channel = id(jsonObject(placed), "channel_id")
            #expect(try await tree(s, wid, owner).channels[second] == [channel])
            #expect(try await s.request(.delete, "/v1/workspaces/\(wid)/categories/\(second)", token: owner.token).status == .ok)
            let after = try await tree(s, wid, owner)
            #expect(after.categories == [first])
            #expect(after.channels[first]?.last == channel)
            #expect(outcome(try await s.request(.delete, "/v1/workspaces/\(wid)/categories/\(first)", token: owner.token)) == "400 E15")
        }
    }
}
