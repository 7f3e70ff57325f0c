import SQLiteNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Retired devices' retention and each app's backlog, for the gateway's housekeeping.
extension SQLiteStore {
    func purgeRetiredDevices(before cutoff: Date, limit: Int) async throws -> Int {
        try await transaction { connection in
            let keys = try await connection.query(SQLiteSchema.retiredDevices, [.integer(Int(cutoff.milliseconds)), .integer(limit)])
            for key in keys {
                let app = SQLiteData.text(key.column("app")?.string ?? "")
                let token = SQLiteData.text(key.column("token")?.string ?? "")
                _ = try await connection.query("DELETE FROM device_tags WHERE app = ? AND token = ?", [app, token])
                _ = try await connection.query("DELETE FROM devices WHERE app = ? AND token = ?", [app, token])
            }
            return keys.count
        }
    }

    func pendingDeliveriesByApp() async throws -> [String: Int] {
        try await exclusive { connection in
            var counts: [String: Int] = [:]
            for row in try await connection.query(SQLiteSchema.pendingByApp) {
                if let app = row.column("app")?.string { counts[app] = max(0, row.column("pending")?.integer ?? 0) }
            }
            return counts
        }
    }
}

extension SQLiteSchema {
    /// Devices retired (unregistered or invalid) before a time.
    static let retiredDevices = """
        SELECT app, token FROM devices WHERE status <> \(StoreCodes.code(DeviceStatus.active)) AND invalidated_at < ?
        LIMIT ?
        """
    /// Deliveries not yet ended, per app, from the active notifications' counts.
    static let pendingByApp = """
        SELECT app, SUM(targeted - accepted - rejected - failed) AS pending FROM notifications
        WHERE status < \(StoreCodes.done) GROUP BY app
        """
}
