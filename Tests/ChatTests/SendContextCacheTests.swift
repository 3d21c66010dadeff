import Events
import Foundation
import Testing

@testable import ChatApp

/// The kept send contexts (SendContextCache.swift): lifetime, the clock moved by a send, the
/// bound, and forgetting a context whose statement wrote nothing.
@Suite("Kept channel send contexts")
struct SendContextCacheTests {
    func context(_ key: SendContextCache.Key, last: Int64?) -> ChannelSendContext {
        ChannelSendContext(
            channel: ChannelRef(id: key.channel, workspaceId: key.workspace, name: "일반"), lastMessage: last, user: key.user,
            email: "a@example.com", nickname: "별명", profileImage: nil, alias: 7)
    }

    func key() -> SendContextCache.Key {
        SendContextCache.Key(channel: ChannelID(UUID()), workspace: WorkspaceID(UUID()), user: UserID(UUID()))
    }

    @Test("kept, advanced only forward, forgotten")
    func keepAdvanceForget() {
        let cache = SendContextCache()
        let (a, b) = (key(), key())
        #expect(cache.context(for: a) == nil)
        cache.keep(context(a, last: nil), for: a)
        #expect(cache.context(for: a)?.lastMessage == nil)
        #expect(cache.context(for: b) == nil, "another sender or channel has its own context")
        cache.advance(a, to: 1_000)
        #expect(cache.context(for: a)?.lastMessage == 1_000)
        cache.advance(a, to: 900)
        #expect(cache.context(for: a)?.lastMessage == 1_000, "a send never moves the kept clock back")
        cache.advance(b, to: 5)
        #expect(cache.context(for: b) == nil, "advancing nothing keeps nothing")
        cache.forget(a)
        #expect(cache.context(for: a) == nil)
        #expect(cache.count == 0)
    }

    @Test("a context older than the lifetime is not used")
    func lifetime() async throws {
        let cache = SendContextCache(lifetime: .milliseconds(500))
        let a = key()
        cache.keep(context(a, last: 1), for: a)
        #expect(cache.context(for: a) != nil)
        try await Task.sleep(for: .milliseconds(600))
        #expect(cache.context(for: a) == nil)
        #expect(cache.count == 0, "an expired context is dropped when asked for")
    }

    @Test("bounded: a full cache drops the expired contexts, or all of them when none has expired")
    func bounded() async throws {
        let expiring = SendContextCache(capacity: 3, lifetime: .milliseconds(500))
        let old = (0..<2).map { _ in key() }
        for k in old { expiring.keep(context(k, last: nil), for: k) }
        try await Task.sleep(for: .milliseconds(600))
        let fresh = key()
        expiring.keep(context(fresh, last: nil), for: fresh)
        #expect(expiring.count == 3)
        // Full: the two expired ones go, the fresh one stays.
        let next = key()
        expiring.keep(context(next, last: nil), for: next)
        #expect(expiring.count == 2)
        #expect(expiring.context(for: fresh) != nil && expiring.context(for: next) != nil)

        // Full with nothing expired: all go, then the new one is kept.
        let lasting = SendContextCache(capacity: 3, lifetime: .seconds(600))
        let kept = (0..<3).map { _ in key() }
        for k in kept { lasting.keep(context(k, last: nil), for: k) }
        #expect(lasting.count == 3)
        let fourth = key()
        lasting.keep(context(fourth, last: nil), for: fourth)
        #expect(lasting.count == 1 && lasting.context(for: fourth) != nil)
        // Replacing a kept context never counts as a new one.
        lasting.keep(context(fourth, last: 9), for: fourth)
        #expect(lasting.count == 1 && lasting.context(for: fourth)?.lastMessage == 9)
    }
}
