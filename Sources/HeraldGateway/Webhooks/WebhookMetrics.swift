import HeraldStore
import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// The webhook sender's metrics, by app and event type (both bounded: apps come from the
/// configuration or the outbox, types are three): events waiting in the outbox, sent, attempts
/// that failed, events dropped after their give-up time, and events refused for want of room.
final class WebhookMetrics: Sendable {
    private let factory: PrometheusMetricsFactory
    private let counters = NIOLockedValueBox<[Key: Metrics.Counter]>([:])
    private let gauges = NIOLockedValueBox<[Key: Metrics.Gauge]>([:])

    struct Key: Hashable {
        var name: String
        var app: String
        var type: String
    }

    init(factory: PrometheusMetricsFactory) {
        self.factory = factory
    }

    func recordSent(app: String, type: WebhookEventType) { counter("herald_webhook_events_sent_total", app, type).increment() }
    func recordFailedAttempt(app: String, type: WebhookEventType) { counter("herald_webhook_attempts_failed_total", app, type).increment() }
    func recordDropped(app: String, type: WebhookEventType) { counter("herald_webhook_events_dropped_total", app, type).increment() }
    /// Events never written: their app's outbox was full (`webhookSender.maximumPendingPerApp`).
    func recordRefused(_ refused: [WebhookEventCount]) {
        for entry in refused { counter("herald_webhook_events_refused_total", entry.app, entry.type).increment(by: Int64(entry.count)) }
    }

    /// The outbox as last read: every app and type seen before and not in `pending` is 0.
    func recordPending(_ pending: [WebhookEventCount]) {
        let counts = Dictionary(pending.map { (Key(name: "herald_webhook_events_pending", app: $0.app, type: $0.type.rawValue), $0.count) }, uniquingKeysWith: +)
        gauges.withLockedValue { gauges in
            for key in counts.keys where gauges[key] == nil {
                gauges[key] = Metrics.Gauge(label: key.name, dimensions: [("app", key.app), ("type", key.type)], factory: factory)
            }
            for (key, gauge) in gauges { gauge.record(counts[key] ?? 0) }
        }
    }

    private func counter(_ name: String, _ app: String, _ type: WebhookEventType) -> Metrics.Counter {
        let key = Key(name: name, app: app, type: type.rawValue)
        return counters.withLockedValue { counters in
            if let existing = counters[key] { return existing }
            let made = Metrics.Counter(label: name, dimensions: [("app", app), ("type", type.rawValue)], factory: factory)
            counters[key] = made
            return made
        }
    }
}
