#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Deliveries held back for a reason that has passed (their push service's host answers again):
/// made due at once.
extension QueueEngine {
    /// Makes due at `now` the pending deliveries of `app`'s devices of `platform` that wait with
    /// `reason`, for notifications still queued or sending, a transaction of at most
    /// ``rowsPerStatement`` rows at a time. Returns how many.
    func wakeHeld(app: String, platform: DevicePlatform, reason: String, now: Date) async throws -> Int {
        var woken = 0
        // Bounded: 10,000 transactions of 5,000 rows is every delivery a store holds, and more.
        for _ in 0..<10_000 {
            let count = try await database.write(.bookkeeping) { [sql, database] connection -> Int in
                let rows = try await connection.query(
                    sql.wakeHeld, [.text(app), .code(PlatformCode(platform)), .text(reason), .int(now.milliseconds), .int(Int64(Self.rowsPerStatement))])
                if !rows.isEmpty { try await database.announceWork(on: connection) }
                return rows.count
            }
            woken += count
            if count > 0 { database.work.signal() }
            if count < Self.rowsPerStatement { break }
        }
        return woken
    }
}

extension QueueStatements {
    /// Up to $5 pending deliveries of notifications of app $1 still queued or sending, of
    /// platform $2, waiting with reason $3 for a time after $4: due at $4 now.
    var wakeHeld: String {
        """
        UPDATE deliveries SET next_attempt_at = $4
        WHERE id IN (SELECT id FROM deliveries
            WHERE notification_id IN (SELECT id FROM notifications WHERE app = $1 AND status < \(NotificationState.finished))
                AND state = \(DeliveryState.pending) AND platform = $2 AND reason = $3 AND next_attempt_at > $4
            LIMIT $5)
        RETURNING id
        """
    }
}
