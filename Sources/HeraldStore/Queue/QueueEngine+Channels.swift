#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Broadcast channels the gateway created at APNs, kept so they can be listed, sent to and deleted.
extension QueueEngine {
    func addChannel(_ channel: StoredChannel) async throws {
        try await database.write(.durable) { [self] connection in
            _ = try await connection.query(sql.insertChannel, [
                .text(channel.app), .text(channel.id), .code(EnvironmentCode(channel.environment)), .int(channel.storesMostRecent ? 1 : 0),
                .int(channel.createdAt.milliseconds),
            ])
        }
    }

    func channels(app: String, limit: Int) async throws -> [StoredChannel] {
        try await database.read { [self] connection in
            try await connection.query(sql.channels, [.text(app), .int(limit)]).map { Self.channel($0, app: app) }
        }
    }

    func channel(app: String, id: String) async throws -> StoredChannel? {
        try await database.read { [self] connection in
            try await connection.query(sql.selectChannel, [.text(app), .text(id)]).first.map { Self.channel($0, app: app) }
        }
    }

    func deleteChannel(app: String, id: String) async throws -> Bool {
        try await database.write(.durable) { [self] connection in
            !(try await connection.query(sql.deleteChannel, [.text(app), .text(id)])).isEmpty
        }
    }

    static func channel(_ row: SQLRow, app: String) -> StoredChannel {
        StoredChannel(
            app: app, id: row.text(0) ?? "", environment: EnvironmentCode.environment(row.int(1)) ?? .production, storesMostRecent: row.int(2) == 1,
            createdAt: Date(milliseconds: row.int(3) ?? 0)
        )
    }
}
