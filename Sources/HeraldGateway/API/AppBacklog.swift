import NIOConcurrencyHelpers

/// Deliveries each app has pending, as this process last knows it: read from the database by
/// the housekeeping task every `statisticsInterval`, and raised by each notification this
/// process queues in between, so a burst of sends is counted before the next read. The API
/// refuses a new notification for an app at or past ``APILimits/maximumPendingPerApp`` (429):
/// one tenant cannot fill the queue for the others. Holds one entry per configured app.
final class AppBacklog: Sendable {
    private let pending = NIOLockedValueBox<[String: Int]>([:])

    /// Replaces what is known with a fresh read of the database.
    func replace(with counts: [String: Int]) {
        pending.withLockedValue { $0 = counts }
    }

    /// Counts `count` more deliveries queued for `app` by this process.
    func add(_ count: Int, app: String) {
        pending.withLockedValue { table in
            let (sum, overflow) = table[app, default: 0].addingReportingOverflow(max(0, count))
            table[app] = overflow ? .max : sum
        }
    }

    /// The app's pending deliveries as last known (0 before the first read).
    func pending(_ app: String) -> Int {
        pending.withLockedValue { $0[app, default: 0] }
    }
}
