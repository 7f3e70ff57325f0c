import Foundation
@testable import HeraldAPNSMock
import Testing

/// The mock's scripted decisions as values: what a connection does at each request, and what a
/// token's fault makes of a request.
@Suite("Mock request plans")
struct MockRequestPlanTests {
    @Test("connection events happen at their position: GOAWAY before a drop, limit changes in order, nothing elsewhere")
    func connectionEvents() {
        let script = MockConnectionScript(goAway: (count: 3, reason: "Shutdown"), drop: 5, limits: [(1, 10), (1, 1), (4, 100)])
        #expect(script.event(at: 0) == .none)
        #expect(script.event(at: 1) == .changeLimits([10, 1]))
        #expect(script.event(at: 3) == .goAway(reason: "Shutdown"))
        #expect(script.event(at: 4) == .changeLimits([100]))
        #expect(script.event(at: 5) == .dropConnection)
        #expect(script.event(at: 6) == .none)
        let both = MockConnectionScript(goAway: (count: 2, reason: "Shutdown"), drop: 2, limits: [(2, 5)])
        #expect(both.event(at: 2) == .goAway(reason: "Shutdown"), "GOAWAY wins over a drop and a limit change at the same request")
        #expect(MockConnectionScript.none.event(at: 0) == .none)
    }

    @Test("each fault gives its plan; faults about the answer still take the request")
    func faults() {
        #expect(MockRequestPlan(fault: nil) == .accept(newStreamLimit: nil, answerBeforeBody: false))
        #expect(MockRequestPlan(fault: .dropConnection) == .dropConnection)
        #expect(MockRequestPlan(fault: .goAway(reason: "Shutdown")) == .goAway(reason: "Shutdown"))
        #expect(MockRequestPlan(fault: .refuseStream) == .refuse)
        #expect(MockRequestPlan(fault: .setMaximumConcurrentStreams(1)) == .accept(newStreamLimit: 1, answerBeforeBody: false))
        #expect(MockRequestPlan(fault: .answerBeforeBody) == .accept(newStreamLimit: nil, answerBeforeBody: true))
        for fault in [MockFault.reject(.badDeviceToken), .delay(.seconds(1)), .noResponse] {
            #expect(MockRequestPlan(fault: fault) == .accept(newStreamLimit: nil, answerBeforeBody: false), "\(fault)")
        }
    }
}
