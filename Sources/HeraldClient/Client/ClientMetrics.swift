import HeraldCore
import Metrics
import Synchronization

/// The client's swift-metrics counters and timers, made once. Labels are prefixed with
/// `herald_apns_`; every metric carries the configured dimensions, and rejections the reason too.
final class ClientMetrics: Sendable {
    let sent: Counter
    let accepted: Counter
    let retried: Counter
    let failed: Counter
    let connectionsOpened: Counter
    let connectionsClosed: Counter
    let latency: Metrics.Timer
    private let rejectedByReason = Mutex<[String: Counter]>([:])
    private let dimensions: [(String, String)]

    init(dimensions: [(String, String)]) {
        self.dimensions = dimensions
        sent = Counter(label: "herald_apns_sent_total", dimensions: dimensions)
        accepted = Counter(label: "herald_apns_accepted_total", dimensions: dimensions)
        retried = Counter(label: "herald_apns_retried_total", dimensions: dimensions)
        failed = Counter(label: "herald_apns_failed_total", dimensions: dimensions)
        connectionsOpened = Counter(label: "herald_apns_connections_opened_total", dimensions: dimensions)
        connectionsClosed = Counter(label: "herald_apns_connections_closed_total", dimensions: dimensions)
        latency = Metrics.Timer(label: "herald_apns_latency", dimensions: dimensions)
    }

    func rejected(_ reason: APNSReason) {
        let name = reason.rawValue.isEmpty ? "unknown" : reason.rawValue
        let counter = rejectedByReason.withLock { counters in
            if let counter = counters[name] { return counter }
            let counter = Counter(label: "herald_apns_rejected_total", dimensions: dimensions + [("reason", name)])
            counters[name] = counter
            return counter
        }
        counter.increment()
    }
}
