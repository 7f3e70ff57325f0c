import Metrics
import HeraldCore
import HeraldStore
import NIOConcurrencyHelpers
import Prometheus

/// The gateway's metrics, recorded through swift-metrics into one Prometheus registry that
/// `GET /metrics` writes out. Every label set is bounded: routes are the API's route templates,
/// apps are the first ``MetricsSettings/maximumAppLabels`` to send (``AppLabels``), outcomes
/// are four, and reasons are ``DeliveryReason/code``s:
/// the known reasons' strings, `Quarantined`, and `other` for any reason Herald does not know.
final class GatewayMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let requests = NIOLockedValueBox<[RequestKey: (counter: Metrics.Counter, timer: Metrics.Timer)]>([:])
    private let deliveries = NIOLockedValueBox<[DeliveryKey: Metrics.Counter]>([:])
    private let pendingDeliveries: Metrics.Gauge
    private let pendingRanges: Metrics.Gauge
    private let activeNotifications: Metrics.Gauge
    private let batchDuration: Metrics.Timer
    private let enqueued: Metrics.Counter
    private let purged: Metrics.Counter
    /// The `herald_push_hosts_backed_off` series last set above 0.
    private let backedOffSeries = NIOLockedValueBox<Set<HostCircuits.AppPlatform>>([])
    /// The webhook sender's.
    let webhooks: WebhookMetrics

    struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    struct DeliveryKey: Hashable {
        var app: String
        /// `apns` or `webpush` (a browser's subscription).
        var platform: String
        var outcome: String
        var reason: String
    }

    /// The `app` label of each app's series (``AppLabels``), here and in the clients' metrics.
    let appLabels: AppLabels

    init(registry: PrometheusCollectorRegistry, maximumAppLabels: Int = MetricsSettings().maximumAppLabels) {
        self.registry = registry
        appLabels = AppLabels(limit: maximumAppLabels)
        var factory = PrometheusMetricsFactory(registry: registry)
        let latency: [Duration] = [.milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5)]
        factory.defaultDurationHistogramBuckets = latency
        self.factory = factory
        pendingDeliveries = Metrics.Gauge(label: "herald_queue_pending_deliveries", factory: factory)
        pendingRanges = Metrics.Gauge(label: "herald_queue_pending_ranges", factory: factory)
        activeNotifications = Metrics.Gauge(label: "herald_queue_active_notifications", factory: factory)
        batchDuration = Metrics.Timer(label: "herald_send_batch_duration_seconds", factory: factory)
        enqueued = Metrics.Counter(label: "herald_notifications_enqueued_total", factory: factory)
        purged = Metrics.Counter(label: "herald_purged_rows_total", factory: factory)
        webhooks = WebhookMetrics(factory: factory)
    }

    /// When an app's credential expires (``CredentialExpiry``), as seconds since the epoch.
    func recordCredentialExpiry(_ expiry: CredentialExpiry) {
        let dimensions = [("app", expiry.app), ("credential", expiry.credential)]
        Metrics.Gauge(label: "herald_credential_expiry_timestamp_seconds", dimensions: dimensions, factory: factory)
            .record(expiry.expiry.timeIntervalSince1970)
    }

    /// How many push-service hosts each app's devices of each platform are backed off from
    /// now (``HostCircuits``), given for every app and platform that has one (the others: none):
    /// one series per app label and platform, whatever the hosts.
    func recordHostsBackedOff(_ counts: [HostCircuits.AppPlatform: Int]) {
        var byLabel: [HostCircuits.AppPlatform: Int] = [:]
        for (key, count) in counts { byLabel[HostCircuits.AppPlatform(app: appLabels.label(key.app), platform: key.platform), default: 0] += count }
        // A series set before and not now goes back to 0.
        let cleared = backedOffSeries.withLockedValue { series in
            defer { series = Set(byLabel.keys) }
            return series.subtracting(byLabel.keys)
        }
        for key in cleared { byLabel[key] = 0 }
        for (key, count) in byLabel {
            Metrics.Gauge(label: "herald_push_hosts_backed_off", dimensions: [("app", key.app), ("platform", key.platform.rawValue)], factory: factory)
                .record(count)
        }
    }

    /// A push-service host of `app`'s `platform` devices was backed off (its circuit opened).
    func recordHostOpened(app: String, platform: DevicePlatform) {
        Metrics.Counter(label: "herald_push_host_backoffs_total", dimensions: [("app", appLabels.label(app)), ("platform", platform.rawValue)], factory: factory)
            .increment()
    }

    /// A probe went to a backed-off push-service host of `app`'s `platform` devices.
    func recordHostProbe(app: String, platform: DevicePlatform) {
        Metrics.Counter(label: "herald_push_host_probes_total", dimensions: [("app", appLabels.label(app)), ("platform", platform.rawValue)], factory: factory)
            .increment()
    }

    /// One API request answered.
    func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = RequestKey(route: route, method: method, status: status)
        let metrics = requests.withLockedValue { table in
            if let existing = table[key] { return existing }
            let dimensions = [("route", route), ("method", method), ("status", String(status))]
            let made = (
                Metrics.Counter(label: "herald_api_requests_total", dimensions: dimensions, factory: factory),
                Metrics.Timer(label: "herald_api_request_duration_seconds", dimensions: [("route", route), ("method", method)], factory: factory)
            )
            table[key] = made
            return made
        }
        metrics.counter.increment()
        metrics.timer.record(duration: duration)
    }

    /// How the devices of one sent batch ended; `platforms`: each device's platform by its
    /// token, when some are not APNs devices (empty: all are).
    func recordOutcomes(app: String, _ outcomes: [DeliveryOutcome], platforms: [String: DevicePlatform] = [:], duration: Duration) {
        let app = appLabels.label(app)
        var counts: [DeliveryKey: Int] = [:]
        // Acceptances, nearly every outcome, are counted without a key per device: APNs's, most
        // of them, in a plain count.
        var acceptedAPNs = 0
        var acceptedOthers: [DevicePlatform: Int] = [:]
        // By index, not `for outcome in outcomes`: a copy of each outcome retains its token (and
        // releases it), 5,000 times a batch, for a look at its length.
        for index in outcomes.indices {
            let key: DeliveryKey
            let devicePlatform = platforms.isEmpty ? .apns : platforms[outcomes[index].token] ?? .apns
            let platform = devicePlatform.rawValue
            switch outcomes[index].result {
            case .accepted:
                if devicePlatform == .apns { acceptedAPNs += 1 } else { acceptedOthers[devicePlatform, default: 0] += 1 }
                continue
            case .rejected(let reason, _): key = DeliveryKey(app: app, platform: platform, outcome: "rejected", reason: Self.label(reason))
            case .retry(let reason, _): key = DeliveryKey(app: app, platform: platform, outcome: "retry", reason: Self.label(reason))
            case .failed(let reason): key = DeliveryKey(app: app, platform: platform, outcome: "failed", reason: Self.label(reason))
            case .skipped(let reason): key = DeliveryKey(app: app, platform: platform, outcome: reason.rawValue, reason: "")
            }
            counts[key, default: 0] += 1
        }
        acceptedOthers[.apns] = acceptedAPNs
        for (platform, count) in acceptedOthers where count > 0 {
            counts[DeliveryKey(app: app, platform: platform.rawValue, outcome: "accepted", reason: ""), default: 0] += count
        }
        for (key, count) in counts {
            let counter = deliveries.withLockedValue { table in
                if let existing = table[key] { return existing }
                let made = Metrics.Counter(
                    label: "herald_deliveries_total", dimensions: [("app", key.app), ("platform", key.platform), ("outcome", key.outcome), ("reason", key.reason)],
                    factory: factory)
                table[key] = made
                return made
            }
            counter.increment(by: count)
        }
        batchDuration.record(duration: duration)
    }

    /// Receipts stored (each the first of its device, event and action), counted by app,
    /// platform and event: one increment per kind, not per receipt.
    func recordReceipts(_ receipts: [ReceiptRecord]) {
        struct Key: Hashable {
            var app: String
            var platform: DevicePlatform
            var event: ReceiptEvent
        }
        var counts: [Key: Int] = [:]
        for receipt in receipts { counts[Key(app: receipt.app, platform: receipt.platform, event: receipt.event), default: 0] += 1 }
        for (key, count) in counts {
            Metrics.Counter(
                label: "herald_receipts_total", dimensions: [("app", appLabels.label(key.app)), ("platform", key.platform.rawValue), ("event", key.event.rawValue)],
                factory: factory
            ).increment(by: count)
        }
    }

    /// Receipts refused, by why (no app label: a forged receipt names no app to trust).
    func recordReceiptsRefused(_ counts: [ReceiptToken.Refusal: Int]) {
        for (refusal, count) in counts {
            Metrics.Counter(label: "herald_receipts_refused_total", dimensions: [("reason", refusal.rawValue)], factory: factory).increment(by: count)
        }
    }

    func recordEnqueued() {
        enqueued.increment()
    }

    /// Rows deleted by retention.
    func recordPurged(_ rows: Int) {
        if rows > 0 { purged.increment(by: rows) }
    }

    func recordQueue(_ statistics: QueueStatistics) {
        pendingDeliveries.record(statistics.pendingDeliveries)
        pendingRanges.record(statistics.pendingRanges)
        activeNotifications.record(statistics.activeNotifications)
    }

    /// A reason as a label: its ``DeliveryReason/code``, which every known reason
    /// (``DeliveryReason/allKnown``) has of its own, and which is `other` for any reason Herald
    /// does not know, so the label set stays bounded whatever APNs or the database says.
    static func label(_ reason: DeliveryReason) -> String {
        reason.code
    }

    /// The Prometheus text exposition of everything recorded.
    func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
