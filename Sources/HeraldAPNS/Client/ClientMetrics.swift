import HeraldCore
import HeraldTransport
import Metrics

/// The APNs client's swift-metrics counters and timers, made once from the configured factory:
/// the transport's (`herald_apns_sent_total`, retries, connections, latency) and what APNs
/// answered. Every metric carries the configured dimensions, and rejections the reason too: one
/// of the known ``APNSReason`` names, or `other` for any reason a server makes up, so a hostile
/// server cannot grow the label set.
final class ClientMetrics: Sendable {
    let transport: TransportMetrics
    let accepted: Counter
    let failed: Counter
    /// One counter per known reason, made up front: the label set is closed.
    private let rejectedByReason: [APNSReason: Counter]
    private let rejectedOther: Counter

    /// The `reason` label of rejections with a reason not in ``APNSReason/allKnown``.
    static let otherReasonLabel = "other"

    init(_ configuration: APNSClient.Configuration.Metrics) {
        let dimensions = configuration.dimensions
        let factory = configuration.factory ?? MetricsSystem.factory
        func counter(_ label: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: dimensions + extra, factory: factory)
        }
        transport = TransportMetrics(platform: "apns", dimensions: dimensions, factory: factory)
        accepted = counter("herald_apns_accepted_total")
        failed = counter("herald_apns_failed_total")
        rejectedByReason = Dictionary(
            uniqueKeysWithValues: APNSReason.allKnown.map { ($0, counter("herald_apns_rejected_total", [("reason", $0.rawValue)])) }
        )
        rejectedOther = counter("herald_apns_rejected_total", [("reason", Self.otherReasonLabel)])
    }

    func rejected(_ reason: APNSReason) {
        (rejectedByReason[reason] ?? rejectedOther).increment()
    }
}
