import Foundation
import HeraldClient
import HeraldCore
import HeraldMock
import Metrics
import MetricsTestKit
import Testing

/// swift-metrics can be bootstrapped once per process: this suite owns it.
let testMetrics: TestMetrics = {
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)
    return metrics
}()

@Suite("Metrics", .timeLimit(.minutes(1)))
struct MetricsTests {
    @Test("sent, accepted, rejected by reason, retried, connections and latency are counted")
    func counters() async throws {
        let metrics = testMetrics
        let fixture = try await MockFixture.start { configuration in
            configuration.script.fail(token(0), with: .reject(.badDeviceToken))
            configuration.script.fail(token(1), with: .reject(.unregistered))
            configuration.script.fail(token(2), with: .reject(.serviceUnavailable), times: 1)
        }
        let dimensions = [("test", UUID().uuidString)]
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.metricsDimensions = dimensions
            $0.maximumConnections = 1
        }) { client in
            try await sendAll(batch(50), with: client)
        }
        #expect(outcomes.filter { $0.response != nil }.count == 48)
        #expect(try metrics.expectCounter("herald_apns_sent_total", dimensions).totalValue == 51)  // one retry
        #expect(try metrics.expectCounter("herald_apns_accepted_total", dimensions).totalValue == 48)
        #expect(try metrics.expectCounter("herald_apns_retried_total", dimensions).totalValue == 1)
        #expect(try metrics.expectCounter("herald_apns_rejected_total", dimensions + [("reason", "BadDeviceToken")]).totalValue == 1)
        #expect(try metrics.expectCounter("herald_apns_rejected_total", dimensions + [("reason", "Unregistered")]).totalValue == 1)
        #expect(try metrics.expectCounter("herald_apns_connections_opened_total", dimensions).totalValue == 1)
        #expect(try metrics.expectCounter("herald_apns_connections_closed_total", dimensions).totalValue == 1)
        #expect(try metrics.expectTimer("herald_apns_latency", dimensions).values.count == 51)
        try await fixture.stop()
    }
}
