import HeraldCore
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device registry and delivery queue, written once over any ``SQLDatabase``: states,
/// transitions, leases, back-off, badges, idempotency, broadcast ranges and purge live here; a
/// database contributes its dialect, its connections and its schema. The rules are tested
/// against each database with the same suite. Times are passed in, so they run on a test's clock.
final class QueueEngine: Sendable {
    let database: any SQLDatabase
    let sql: QueueStatements
    let logger: Logger
    /// The apps and event types some webhook wants: events are written for these alone.
    private let interest = Mutex(WebhookInterest())
    /// Each app's outbox as this process last counted it, and the events it had no room for.
    let outbox = OutboxBudget()

    /// Rows per statement for lists and rows sent as one JSON parameter.
    static let rowsPerStatement = 5000
    /// How many claims in a row may find only work that cannot be sent before one returns empty.
    static let claimAttempts = 8

    init(database: any SQLDatabase, logger: Logger) {
        self.database = database
        self.sql = QueueStatements(d: database.dialect)
        self.logger = logger
    }

    /// Keeps the database's connections going until cancelled.
    func run() async { await database.run() }
    func close() async throws { try await database.close() }

    /// Applies the database's migrations, then gives rows from before migration 4 their hash
    /// (an index of the rows without one makes this a look at an empty index once done, and a
    /// start after a crash midway finishes it).
    func migrate() async throws {
        try await database.migrate()
        try await fillHashes()
    }

    func checkReady() async throws { try await database.checkReady() }
    func inspect() async throws -> StoreInspection { try await database.inspect() }

    var webhookInterest: WebhookInterest {
        get { interest.withLock { $0 } }
        set { interest.withLock { $0 = newValue } }
    }

    /// Returns when there may be work (another process or task queued some), when the next
    /// work queued for later falls due, or after `timeout`. One look at the two queues' earliest
    /// times (each an index's first entry) instead of a timer per notification.
    func waitForWork(timeout: Duration, now: Date) async {
        var wait = timeout
        if let row = try? await database.read({ [sql] connection in try await connection.query(sql.nextDue, [.int(now.milliseconds)]).first }) {
            let next = [row.int(0), row.int(1)].compactMap { $0 }.min()
            if let next, next > now.milliseconds, next - now.milliseconds < Int64(timeout.components.seconds) * 1000 {
                wait = .milliseconds(next - now.milliseconds)
            }
        }
        await database.work.wait(timeout: wait)
    }

    /// Marks a notification done when nothing of it is left to send.
    func finishIfDone(_ id: String, now: Date, on connection: any SQLConnection) async throws {
        let open = try await connection.query(sql.unfinishedWork, [.text(id)]).first?.int(0) ?? 1
        guard open == 0 else { return }
        let finished = try await connection.query(sql.finishNotification, [.int(now.milliseconds), .text(id)])
        if let app = finished.first?.text(0) { try await recordCompleted(app: app, notification: id, now: now, on: connection) }
    }

    static func chunks<Element>(_ elements: [Element], of size: Int = rowsPerStatement) -> [ArraySlice<Element>] {
        stride(from: 0, to: elements.count, by: size).map { elements[$0..<min($0 + size, elements.count)] }
    }
}

/// Where a broadcast's range was read up to: its devices are read in (hash, token) order.
struct RangeCursor: Sendable, Hashable {
    var hash: Int64
    var token: String

    /// Before every device of a range.
    static let start = RangeCursor(hash: -1, token: "")

    /// Where reading a range that starts at `lower` begins: this cursor, or the range's start
    /// when the cursor lies below it (a range split off starts there). Read as the one lower
    /// bound `(hash, token) > cursor`, the index is entered at the cursor; with `hash >= lower`
    /// beside it, SQLite entered it at `lower` and walked up to the cursor, so each batch cost
    /// its offset into the range. No address is empty, so `(lower, "")` excludes none of `lower`'s.
    func reading(from lower: Int64) -> RangeCursor {
        hash < lower ? RangeCursor(hash: lower, token: "") : self
    }
}
