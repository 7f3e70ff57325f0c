import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Retired devices' retention and each app's backlog, for the gateway's housekeeping.
extension PostgresStore {
    func purgeRetiredDevices(before cutoff: Date, limit: Int) async throws -> Int {
        try await transaction { [self] connection in
            let keys = try await run(PostgresSchema.retiredDevices, [.int(cutoff.milliseconds), .int(Int64(limit))], on: connection)
                .map { try $0.decode((String, String).self) }
            guard !keys.isEmpty else { return 0 }
            let apps = keys.map(\.0), tokens = keys.map(\.1)
            for table in ["device_tags", "devices"] {
                try await run(
                    "DELETE FROM \(table) t USING UNNEST($1::TEXT[], $2::TEXT[]) AS k(app, token) WHERE t.app = k.app AND t.token = k.token",
                    [.texts(apps), .texts(tokens)], on: connection
                )
            }
            return keys.count
        }
    }

    func pendingDeliveriesByApp() async throws -> [String: Int] {
        try await read { [self] connection in
            var counts: [String: Int] = [:]
            for row in try await run(PostgresSchema.pendingByApp, on: connection) {
                let (app, pending) = try row.decode((String, Int64).self)
                counts[app] = max(0, Int(pending))
            }
            return counts
        }
    }
}

extension PostgresSchema {
    /// Devices retired (unregistered or invalid) before a time; locked, skipping
    /// those another process is purging.
    static let retiredDevices = """
        SELECT app, token FROM devices WHERE status <> \(StoreCodes.code(DeviceStatus.active)) AND invalidated_at < $1
        LIMIT $2 FOR UPDATE SKIP LOCKED
        """
    /// Deliveries not yet ended, per app, from the active notifications' counts.
    static let pendingByApp = """
        SELECT app, COALESCE(SUM(targeted - accepted - rejected - failed), 0)::BIGINT FROM notifications
        WHERE status < \(StoreCodes.done) GROUP BY app
        """
}
