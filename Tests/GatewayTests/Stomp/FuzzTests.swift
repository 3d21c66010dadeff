import TestSupport
import Testing

@testable import GatewayApp

@Suite("Fuzz")
struct FuzzTests {
    @Test func randomFramesRoundTripThroughRandomChunking() throws {
        var rng = SplitMix64(state: 42)
        let alphabet = Array("ab:\\\n\r\0 é✓-/".unicodeScalars)
        func randomText(maxLength: Int) -> String {
            var text = ""
            for _ in 0..<Int.random(in: 0...maxLength, using: &rng) {
                text.unicodeScalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)])
            }
            return text
        }
        let commands: [StompCommand] = [.send, .message, .error, .subscribe, .ack, .receipt]
        for _ in 0..<300 {
            var headers = StompHeaders()
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                headers.append("h" + randomText(maxLength: 6), randomText(maxLength: 12))
            }
            let body = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let frame = StompFrame(command: commands[Int.random(in: 0..<commands.count, using: &rng)], headers: headers, body: body)

            var expected = frame
            expected.headers = StompHeaders(frame.headers.map { ($0.name.filter { $0 != "\0" }, $0.value.filter { $0 != "\0" }) })
            if !body.isEmpty { expected.headers.append("content-length", String(body.count)) }

            let wire = frame.encoded() + [0x0A]
            var parser = StompParser()
            var results: [StompParseResult] = []
            var offset = 0
            while offset < wire.count {
                let end = min(wire.count, offset + Int.random(in: 1...9, using: &rng))
                parser.append(wire[offset..<end])
                offset = end
                results += try parser.drain()
            }
            #expect(results == [.frame(expected), .heartbeat])
        }
    }

    @Test func randomGarbageNeverCrashesAndBufferStaysBounded() {
        var rng = SplitMix64(state: 7)
        let seeds = [bytes("SEND\ncontent-length:3\n\nabc\0"), bytes("CONNECT\naccept-version:1.2\n\n\0\n"), bytes("MESSAGE\na\\c:b\r\n\r\nx\0")]
        for _ in 0..<2_000 {
            var input = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let position = Int.random(in: 0..<input.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: input[position] = UInt8.random(in: 0...255, using: &rng)
                case 1: input.insert(UInt8.random(in: 0...255, using: &rng), at: position)
                default: input.remove(at: position)
                }
                if input.isEmpty { input = [0x0A] }
            }
            var parser = StompParser(maxFrameBytes: 64, maxHeaderCount: 4, maxHeaderLineBytes: 16, maxCommandBytes: 12)
            for chunk in [input, input, input] {
                parser.append(chunk)
                _ = try? parser.drain()
                #expect(parser.bufferedByteCount <= 64 + input.count)
            }
        }
    }
}
