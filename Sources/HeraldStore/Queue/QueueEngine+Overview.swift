#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an operator looks at: an app's devices by status, kind and environment, its unfinished
/// work, and its deliveries per minute.
extension QueueEngine {
    /// Rows of `delivery_minutes` per app and minute: outcomes are added to one of them at random,
    /// so concurrent completions (PostgreSQL) seldom wait for the same row. The table holds at most
    /// this many rows per app and minute of retention.
    static let activityShards = 8

    func deviceCounts(app: String) async throws -> [DeviceCount] {
        try await database.read { [self] connection in
            try await connection.query(sql.deviceCounts, [.text(app)]).map { row in
                DeviceCount(
                    status: DeviceCode(code: row.int(DeviceCountColumn.status))?.status ?? .active,
                    kind: KindCode(code: row.int(DeviceCountColumn.kind))?.kind ?? .alert,
                    environment: EnvironmentCode.environment(row.int(DeviceCountColumn.environment)),
                    platform: PlatformCode.platform(row.int(DeviceCountColumn.platform)), count: row.int(DeviceCountColumn.count, default: 0)
                )
            }
        }
    }

    func queue(app: String) async throws -> AppQueue {
        try await database.read { [self] connection in
            let row = try await connection.query(sql.appQueue, [.text(app)]).first
            return AppQueue(activeNotifications: row?.int(0, default: 0) ?? 0, pendingDeliveries: max(0, row?.int(1, default: 0) ?? 0))
        }
    }

    /// The `minutes` whole minutes up to and including `now`'s, oldest first; a minute with no
    /// deliveries counts zero.
    func activity(app: String, minutes: Int, now: Date) async throws -> [ActivityMinute] {
        let last = Self.minute(of: now)
        let first = last - Int64(minutes) + 1
        let rows = try await database.read { [self] connection in
            try await connection.query(sql.activity, [.text(app), .int(first), .int(last)])
        }
        var counted: [Int64: ActivityMinute] = [:]
        for row in rows {
            guard let minute = row.int(0) else { continue }
            counted[minute] = ActivityMinute(
                start: Date(milliseconds: minute * 60_000), accepted: row.int(1, default: 0), rejected: row.int(2, default: 0), failed: row.int(3, default: 0)
            )
        }
        return (first...last).map { counted[$0] ?? ActivityMinute(start: Date(milliseconds: $0 * 60_000)) }
    }

    /// Adds deliveries that ended at `now` to `app`'s minute, last in its transaction: the row's
    /// lock is then held by a transaction that waits for nothing else.
    func recordMinute(app: String, accepted: Int, rejected: Int, failed: Int, now: Date, on connection: any SQLConnection) async throws {
        guard accepted + rejected + failed > 0 else { return }
        try await connection.query(sql.recordMinute, [
            .text(app), .int(Self.minute(of: now)), .int(Int.random(in: 0..<Self.activityShards)), .int(accepted), .int(rejected), .int(failed),
        ])
    }

    static func minute(of date: Date) -> Int64 {
        let milliseconds = date.milliseconds
        return milliseconds >= 0 ? milliseconds / 60_000 : (milliseconds - 59_999) / 60_000
    }
}
