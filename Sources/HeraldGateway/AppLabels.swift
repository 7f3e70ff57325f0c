import Synchronization

/// The `app` label of the gateway's metrics: its own ID for each of the first
/// ``MetricsSettings/maximumAppLabels`` apps that send, ``other`` for every app after them, so
/// `/metrics` stays bounded however many apps the gateway serves. An app keeps its label for the
/// life of the process (a counter never moves to another series).
final class AppLabels: Sendable {
    /// The label of the apps past the limit.
    static let other = "_other"

    /// How many apps get a label of their own.
    let limit: Int
    private let given = Mutex<[String: String]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// `app`'s label.
    func label(_ app: String) -> String {
        given.withLock { given in
            if let label = given[app] { return label }
            guard given.count < limit else { return Self.other }
            given[app] = app
            return app
        }
    }
}
