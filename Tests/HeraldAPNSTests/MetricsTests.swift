import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Metrics
import MetricsTestKit
import Testing

/// Each test gives its client a factory of its own, so nothing goes through the global
/// `MetricsSystem` and tests cannot see each other's counts.
@Suite("Metrics", .timeLimit(.minutes(6)))
struct MetricsTests {
    @Test("sent, accepted, rejected by reason, retried, connections and latency are counted")
    func counters() async throws {
        let metrics = TestMetrics()
        let fixture = try await MockFixture.start { configuration in
            configuration.script.fail(token(0), with: .reject(.badDeviceToken))
            configuration.script.fail(token(1), with: .reject(.unregistered))
            configuration.script.fail(token(2), with: .reject(.serviceUnavailable), times: 1)
        }
        let dimensions = [("app", "orders")]
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.metrics.dimensions = dimensions
            $0.metrics.factory = metrics
            $0.pool.maximumConnections = 1
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

    @Test("reasons a server makes up are counted under one label: the reason label set stays closed")
    func unknownReasonsShareOneLabel() async throws {
        let metrics = TestMetrics()
        let madeUp = (0..<20).map { "MadeUp\($0)" }
        let fixture = try await MockFixture.start { configuration in
            for (index, reason) in madeUp.enumerated() {
                configuration.script.fail(token(index), with: .reject(status: 400, reason: reason))
            }
        }
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.metrics.factory = metrics
            $0.retry = .none
        }) { client in
            try await sendAll(batch(madeUp.count), with: client)
        }
        // The caller still sees the reason as the server sent it.
        #expect(outcomes.map { $0.rejection?.reason.rawValue } == madeUp)
        #expect(try metrics.expectCounter("herald_apns_rejected_total", [("reason", "other")]).totalValue == 20)
        let labels = Set(metrics.counters(label: "herald_apns_rejected_total").flatMap { $0.dimensions.filter { $0.0 == "reason" }.map(\.1) })
        #expect(labels == Set(APNSReason.allKnown.map(\.rawValue) + ["other"]))
        try await fixture.stop()
    }
}
