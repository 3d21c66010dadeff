import ServiceKit
import Testing

@testable import PushApp

@Suite("push settings")
struct PushSettingsTests {
    func settings(_ environment: [String: String]) throws -> PushSettings {
        try PushSettings(ServiceSettings(serviceName: PushService.name, defaults: PushService.defaults, environment: environment, arguments: ["push"]))
    }

    @Test("the planner's linger: 20 ms by default, set by PUSH_PLANNER_LINGER_MS, refused outside 0…1000")
    func plannerLinger() throws {
        #expect(try settings([:]).plannerLingerMilliseconds == 20)
        #expect(try settings(["PUSH_PLANNER_LINGER_MS": "0"]).plannerLingerMilliseconds == 0)
        for bad in ["-1", "1001"] {
            #expect(throws: StartupError.self, "\(bad)") { try settings(["PUSH_PLANNER_LINGER_MS": bad]) }
        }
    }
}
