import HeraldCore
import Metrics
import Synchronization

/// The client's swift-metrics counters and timers, made once. Labels are prefixed with
/// `herald_apns_`; rejections carry the reason as a dimension.
final class ClientMetrics: Sendable {
    let sent: Counter
    let accepted: Counter
    let retried: Counter
    let failed: Counter
    let connectionsOpened: Counter
    let connectionsClosed: Counter
    let latency: Metrics.Timer
    private let rejectedByReason = Mutex<[String: Counter]>([:])

    init() {
        sent = Counter(label: "herald_apns_sent_total")
        accepted = Counter(label: "herald_apns_accepted_total")
        retried = Counter(label: "herald_apns_retried_total")
        failed = Counter(label: "herald_apns_failed_total")
        connectionsOpened = Counter(label: "herald_apns_connections_opened_total")
        connectionsClosed = Counter(label: "herald_apns_connections_closed_total")
        latency = Metrics.Timer(label: "herald_apns_latency")
    }

    func rejected(_ reason: APNSReason) {
        let name = reason.rawValue.isEmpty ? "unknown" : reason.rawValue
        let counter = rejectedByReason.withLock { counters in
            if let counter = counters[name] { return counter }
            let counter = Counter(label: "herald_apns_rejected_total", dimensions: [("reason", name)])
            counters[name] = counter
            return counter
        }
        counter.increment()
    }
}
