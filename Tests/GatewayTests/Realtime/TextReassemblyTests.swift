import HummingbirdWebSocket
import NIOCore
import Testing

@testable import GatewayApp

@Suite("Client WebSocket messages joined from their frames")
struct TextReassemblyTests {
    private func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("a whole text frame is a message; fragments are joined in order, over any number of messages")
    func joins() {
        var reassembly = TextReassembly(maxBytes: 64)
        #expect(reassembly.take(.text, fin: true, data: bytes("hello")) == .text("hello"))
        for _ in 0..<2 {
            #expect(reassembly.take(.text, fin: false, data: bytes("{\"op\":")) == .partial)
            #expect(reassembly.take(.continuation, fin: false, data: bytes("\"heart")) == .partial)
            #expect(reassembly.take(.continuation, fin: true, data: bytes("beat\"}")) == .text(#"{"op":"heartbeat"}"#))
        }
        #expect(reassembly.take(.text, fin: true, data: bytes("안녕")) == .text("안녕"))
    }

    @Test("binary messages, whole or in fragments, are reported and not kept")
    func binary() {
        var reassembly = TextReassembly(maxBytes: 16)
        #expect(reassembly.take(.binary, fin: true, data: bytes("abc")) == .binary)
        #expect(reassembly.take(.binary, fin: false, data: bytes("abcdef")) == .partial)
        #expect(reassembly.take(.continuation, fin: true, data: bytes("ghij")) == .binary)
        #expect(reassembly.take(.text, fin: true, data: bytes("after")) == .text("after"))
    }

    @Test("fragments over the limit, a continuation without a start and a message inside a message end the socket")
    func violations() {
        var large = TextReassembly(maxBytes: 10)
        #expect(large.take(.text, fin: false, data: bytes("123456")) == .partial)
        #expect(large.take(.continuation, fin: false, data: bytes("78901")) == .tooLarge)
        // The limit counts the whole message: exactly maxBytes is taken.
        var exact = TextReassembly(maxBytes: 10)
        #expect(exact.take(.text, fin: false, data: bytes("123456")) == .partial)
        #expect(exact.take(.continuation, fin: true, data: bytes("7890")) == .text("1234567890"))

        var orphan = TextReassembly(maxBytes: 10)
        #expect(orphan.take(.continuation, fin: true, data: bytes("x")) == .violation)
        var nested = TextReassembly(maxBytes: 10)
        #expect(nested.take(.text, fin: false, data: bytes("a")) == .partial)
        #expect(nested.take(.text, fin: true, data: bytes("b")) == .violation)
    }
}
