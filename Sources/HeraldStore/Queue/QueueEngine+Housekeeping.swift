import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the gateway's housekeeping reads and deletes.
extension QueueEngine {
    func statistics(now: Date) async throws -> QueueStatistics {
        try await database.read { [self] connection in
            let row = try await connection.query(sql.statistics).first
            return QueueStatistics(
                pendingDeliveries: row?.int(0, default: 0) ?? 0, pendingRanges: row?.int(1, default: 0) ?? 0,
                activeNotifications: row?.int(2, default: 0) ?? 0
            )
        }
    }

    /// Deletes up to `limit` rows of outcomes and notifications finished before `cutoff`; returns how many.
    func purge(finishedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await database.write(.durable) { [self] connection in
            let time: SQLValue = .int(cutoff.milliseconds)
            // At most `activityShards` rows per app and minute: not counted against `limit`.
            try await connection.query(sql.purgeMinutes, [.int(Self.minute(of: cutoff))])
            var purged = try await connection.query(sql.purgeDeliveries, [time, .int(limit)]).count
            if purged < limit {
                let ids = try await connection.query(sql.purgeableNotifications, [time, .int(limit - purged)]).compactMap { $0.text(0) }
                if !ids.isEmpty {
                    for statement in sql.deleteNotifications { try await connection.query(statement, [.texts(ids)]) }
                    purged += ids.count
                }
            }
            return purged
        }
    }

    /// Deletes up to `limit` rows of what caps counted and digests held, not written since
    /// `cutoff`: older than any window reaches (a cap's window is at most the retention, a
    /// digest's at most a day). Found by a read, which takes no writer's turn however long the
    /// tables are (no index orders them by time), then deleted by key if still stale; returns how many.
    func purgeScreening(before cutoff: Date, limit: Int) async throws -> Int {
        let time: SQLValue = .int(cutoff.milliseconds)
        let (frequency, digests) = try await database.read { [self] connection in
            (
                try await connection.query(sql.staleFrequency, [time, .int(limit)]).map { [$0[0], $0[1], $0[2]] },
                try await connection.query(sql.staleDigests, [time, .int(limit)]).map { [$0[0], $0[1], $0[2]] }
            )
        }
        guard !frequency.isEmpty || !digests.isEmpty else { return 0 }
        return try await database.write(.durable) { [self] connection in
            var deleted = 0
            if !frequency.isEmpty { deleted += try await connection.query(sql.deleteFrequencyRows, [time, .rows(frequency)]).count }
            if !digests.isEmpty { deleted += try await connection.query(sql.deleteDigestRows, [time, .rows(digests)]).count }
            return deleted
        }
    }

    /// Retires up to `limit` of `app`'s active devices of `platform` not registered again since
    /// `cutoff`, as `Stale` at `now`, with a `device.retired` event each; returns how many.
    func retireStale(app: String, platform: DevicePlatform, notUpdatedSince cutoff: Date, limit: Int, now: Date) async throws -> Int {
        try await database.write(.durable) { [self] connection in
            let retired = try await connection.query(
                sql.retireStaleDevices, [.text(app), .code(PlatformCode(platform)), .int(cutoff.milliseconds), .int(now.milliseconds), .int(limit)])
            if !retired.isEmpty {
                let reason = DeliveryReason.gateway(.stale).description
                let reports = Dictionary(
                    retired.compactMap { $0.text(0) }.map { ($0, Invalidation(token: $0, reason: reason, timestamp: now)) }, uniquingKeysWith: { first, _ in first })
                try await recordRetired(app: app, retired, reports: reports, now: now, on: connection)
            }
            return retired.count
        }
    }

    /// Deletes up to `limit` devices retired (unregistered or invalid) before `cutoff`, with their tags; returns how many.
    func purgeRetiredDevices(before cutoff: Date, limit: Int) async throws -> Int {
        try await database.write(.durable) { [self] connection in
            let keys = try await connection.query(sql.retiredDevices, [.int(cutoff.milliseconds), .int(limit)])
            guard !keys.isEmpty else { return 0 }
            for (app, devices) in Dictionary(grouping: keys, by: { $0.text(0) ?? "" }) {
                let rows: [[SQLValue]] = devices.map { [.text($0.text(1)), $0[2]] }
                for statement in sql.deleteDevices { try await connection.query(statement, [.text(app), .rows(rows)]) }
            }
            return keys.count
        }
    }

    /// Deliveries not yet ended, per app (from the active notifications' counts).
    func pendingDeliveriesByApp() async throws -> [String: Int] {
        try await database.read { [self] connection in
            var counts: [String: Int] = [:]
            for row in try await connection.query(sql.pendingByApp) {
                if let app = row.text(0) { counts[app] = max(0, row.int(1, default: 0)) }
            }
            return counts
        }
    }
}
