import Common
import Foundation
import Logging
import ServiceKit
import Testing

@Suite("LOG_FORMAT=json: one JSON object per line")
struct JSONLogHandlerTests {
    @Test("ts in UTC with milliseconds, level, logger, msg, source and metadata (handler's, then the call's); escaping survives quotes and newlines")
    func line() throws {
        let lines = Locked<[Data]>([])
        var handler = JSONLogHandler(label: "chat") { data in lines.withLock { $0.append(data) } }
        handler[metadataKey: "service"] = "chat"
        var logger = Logger(label: "chat") { _ in handler }
        logger[metadataKey: "request.id"] = "r-1"
        logger.info("sent \"x\"\nnext", metadata: ["event.id": "e-1", "count": .stringConvertible(3)])
        logger.debug("below the level")
        let written = lines.value
        #expect(written.count == 1)
        let data = try #require(written.first)
        #expect(data.last == 0x0A)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["msg"] as? String == "sent \"x\"\nnext")
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "chat")
        #expect(object["service"] as? String == "chat")
        #expect(object["request.id"] as? String == "r-1")
        #expect(object["event.id"] as? String == "e-1")
        #expect(object["count"] as? String == "3")
        let ts = try #require(object["ts"] as? String)
        #expect(ts.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil, "\(ts)")
    }
}
