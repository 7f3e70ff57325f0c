import Metrics

/// What every HTTP/2 client counts the same way, whatever its platform: requests written,
/// attempts retried, connections opened and closed, and the latency of answers. Labels are
/// `herald_<platform>_…` (`herald_apns_sent_total`), with the client's dimensions. What an
/// answer meant (accepted, rejected and why) is the platform's to count.
package final class TransportMetrics: Sendable {
    package let sent: Counter
    package let retried: Counter
    package let connectionsOpened: Counter
    package let connectionsClosed: Counter
    package let latency: Metrics.Timer

    /// - Parameters:
    ///   - platform: the label's middle part: `apns`, `webpush`, `fcm`.
    ///   - factory: `nil` uses the global `MetricsSystem.factory`.
    package init(platform: String, dimensions: [(String, String)], factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        func counter(_ name: String) -> Counter {
            Counter(label: "herald_\(platform)_\(name)", dimensions: dimensions, factory: factory)
        }
        sent = counter("sent_total")
        retried = counter("retried_total")
        connectionsOpened = counter("connections_opened_total")
        connectionsClosed = counter("connections_closed_total")
        latency = Metrics.Timer(label: "herald_\(platform)_latency", dimensions: dimensions, factory: factory)
    }

    /// Metrics that go nowhere.
    package static let none = TransportMetrics(platform: "none", dimensions: [], factory: NOOPMetricsHandler.instance)
}
