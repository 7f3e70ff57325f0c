import HeraldCore
import Metrics

/// The client's swift-metrics counters and timers, made once from the configured factory.
/// Labels are prefixed with `herald_apns_`; every metric carries the configured dimensions, and
/// rejections the reason too: one of the known ``APNSReason`` names, or `other` for any reason a
/// server makes up, so a hostile server cannot grow the label set.
final class ClientMetrics: Sendable {
    let sent: Counter
    let accepted: Counter
    let retried: Counter
    let failed: Counter
    let connectionsOpened: Counter
    let connectionsClosed: Counter
    let latency: Metrics.Timer
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
        sent = counter("herald_apns_sent_total")
        accepted = counter("herald_apns_accepted_total")
        retried = counter("herald_apns_retried_total")
        failed = counter("herald_apns_failed_total")
        connectionsOpened = counter("herald_apns_connections_opened_total")
        connectionsClosed = counter("herald_apns_connections_closed_total")
        latency = Metrics.Timer(label: "herald_apns_latency", dimensions: dimensions, factory: factory)
        rejectedByReason = Dictionary(
            uniqueKeysWithValues: APNSReason.allKnown.map { ($0, counter("herald_apns_rejected_total", [("reason", $0.rawValue)])) }
        )
        rejectedOther = counter("herald_apns_rejected_total", [("reason", Self.otherReasonLabel)])
    }

    func rejected(_ reason: APNSReason) {
        (rejectedByReason[reason] ?? rejectedOther).increment()
    }
}
