import HeraldCore
import HeraldStore
import Testing

@testable import HeraldServer

/// The delivery counters' reason labels: one per known reason, a bounded set whatever comes in.
@Suite("Gateway metrics")
struct GatewayMetricsTests {
    @Test("every known reason gets a label of its own: its string, never other")
    func knownReasons() {
        let labels = DeliveryReason.allKnown.map(GatewayMetrics.label)
        for (reason, label) in zip(DeliveryReason.allKnown, labels) {
            #expect(label == reason.description, "\(reason)")
            #expect(label != "other", "\(reason)")
        }
        #expect(Set(labels).count == DeliveryReason.allKnown.count, "no two known reasons share a label")
    }

    @Test("the labels the gateway has always given stay the same")
    func stableLabels() {
        let cases: [(DeliveryReason, String)] = [
            ("Unregistered", "Unregistered"), ("ServiceUnavailable", "ServiceUnavailable"), ("UnknownApp", "UnknownApp"),
            ("shutdown", "shutdown"), ("connectionFailed", "connectionFailed"), ("Expired", "Expired"), ("expired", "expired"),
            ("Expired (last: ServiceUnavailable)", "Expired"), ("Cancelled", "Cancelled"), ("protocolError", "protocolError"),
            ("NotAReason", "other"), ("", "other"), (.apns(.unknown("BrandNew")), "other"),
        ]
        for (reason, label) in cases {
            #expect(GatewayMetrics.label(reason) == label, "\(reason)")
        }
    }

    @Test("reasons Herald does not know share one label, so the label set stays bounded")
    func bounded() {
        let strange = (0..<500).map { DeliveryReason.other("reason-\($0)") } + (0..<500).map { DeliveryReason.apns(.unknown("apns-\($0)")) }
        #expect(Set(strange.map(GatewayMetrics.label)) == ["other"])
        #expect(GatewayMetrics.label(.quarantined("badge -1 is outside 0...99999")) == "Quarantined")
    }

    @Test("recorded outcomes are counted under their outcome and reason label")
    func exposition() {
        let metrics = GatewayMetrics(registry: .init())
        let outcomes: [DeliveryOutcome] = [
            DeliveryOutcome(token: "a", result: .accepted(apnsID: nil)),
            DeliveryOutcome(token: "b", result: .rejected(reason: .apns(.unregistered), timestamp: nil)),
            DeliveryOutcome(token: "c", result: .retry(reason: .gateway(.unknownApp))),
            DeliveryOutcome(token: "d", result: .retry(reason: .gateway(.unknownApp))),
            DeliveryOutcome(token: "e", result: .failed(reason: .gateway(.payloadInvalid))),
            DeliveryOutcome(token: "f", result: .rejected(reason: "SomethingNew", timestamp: nil)),
        ]
        metrics.recordOutcomes(app: "shop", outcomes, duration: .milliseconds(3))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        for line in [
            #"herald_deliveries_total{app="shop",outcome="accepted",reason=""} 1"#,
            #"herald_deliveries_total{app="shop",outcome="rejected",reason="Unregistered"} 1"#,
            #"herald_deliveries_total{app="shop",outcome="retry",reason="UnknownApp"} 2"#,
            #"herald_deliveries_total{app="shop",outcome="failed",reason="PayloadInvalid"} 1"#,
            #"herald_deliveries_total{app="shop",outcome="rejected",reason="other"} 1"#,
        ] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
    }
}
