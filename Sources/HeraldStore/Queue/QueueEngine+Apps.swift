#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Apps defined through the admin API, their keys, and deleting every row of an app.
extension QueueEngine {
    func appCatalogVersion() async throws -> Int64 {
        try await database.read { [sql] connection in
            try await connection.query(sql.appCatalogVersion).first?.int(0) ?? 0
        }
    }

    func appCatalog() async throws -> AppCatalog {
        try await database.read { [sql] connection in
            // In one read: the version goes with what was read under it.
            let version = try await connection.query(sql.appCatalogVersion).first?.int(0) ?? 0
            let definitions = try await connection.query(sql.appDefinitionSummaries).map(Self.appDefinitionSummary)
            let keys = try await connection.query(sql.appKeys).map { row in
                StoredAppKey(
                    app: row.text(1) ?? "", name: row.text(2) ?? "", sha256: Self.bytes(hex: row.text(0) ?? ""),
                    createdAt: Date(milliseconds: row.int(3) ?? 0))
            }
            return AppCatalog(version: version, definitions: definitions, keys: keys)
        }
    }

    func appDefinitions(ids: [String]) async throws -> [AppDefinition] {
        guard !ids.isEmpty else { return [] }
        return try await database.read { [sql] connection in
            try await connection.query(sql.appDefinitionsByID, [.texts(ids)]).map { row in
                let summary = Self.appDefinitionSummary(row)
                return AppDefinition(
                    id: summary.id, sealed: row.blob(AppDefinitionColumn.allCases.count) ?? [], sealedWith: summary.sealedWith,
                    createdAt: summary.createdAt, updatedAt: summary.updatedAt, deletingSince: summary.deletingSince)
            }
        }
    }

    func putAppDefinition(id: String, sealed: [UInt8], sealedWith: String, now: Date) async throws -> (AppDefinitionSummary, created: Bool) {
        try await database.write(.durable) { [sql] connection in
            let existing = try await connection.query(sql.lockAppDefinition, [.text(id)]).first.map(Self.appDefinitionSummary)
            if existing?.deletingSince != nil {
                throw StoreError(.conflict, "app \(id) is being deleted; define it again once it is gone")
            }
            let row = try await connection.query(sql.putAppDefinition, [.text(id), .blob(sealed), .text(sealedWith), .int(now.milliseconds)])
            try await connection.query(sql.raiseAppCatalogVersion)
            guard let stored = row.first.map(Self.appDefinitionSummary) else { throw StoreError(.databaseError, "app \(id) was not stored") }
            return (stored, existing == nil)
        }
    }

    func resealAppDefinition(_ read: AppDefinitionSummary, sealed: [UInt8], sealedWith: String) async throws -> Bool {
        try await database.write(.durable) { [sql] connection in
            !(try await connection.query(sql.resealAppDefinition, [
                .text(read.id), .blob(sealed), .text(sealedWith), .text(read.sealedWith), .int(read.updatedAt.milliseconds),
            ])).isEmpty
        }
    }

    func addAppKey(_ key: StoredAppKey) async throws {
        try await database.write(.durable) { [sql] connection in
            let inserted = try await connection.query(sql.insertAppKey, [
                .text(Self.hex(key.sha256)), .text(key.app), .text(key.name), .int(key.createdAt.milliseconds),
            ])
            guard !inserted.isEmpty else { throw StoreError(.conflict, "app \(key.app) has a key named \(key.name) already") }
            try await connection.query(sql.raiseAppCatalogVersion)
        }
    }

    func deleteAppKey(app: String, name: String) async throws -> Bool {
        try await database.write(.durable) { [sql] connection in
            guard !(try await connection.query(sql.deleteAppKey, [.text(app), .text(name)])).isEmpty else { return false }
            try await connection.query(sql.raiseAppCatalogVersion)
            return true
        }
    }

    /// Deletes every row of `app`: first, in one transaction, its definition is marked as being
    /// deleted (no process serves it from then on), its keys go and its unfinished notifications
    /// are cancelled; then its rows go, table by table, `batchSize` at a time, each batch a short
    /// transaction (an app of millions of devices never holds the database for long); last, its
    /// definition. A deletion cut short (the process stopped) leaves the definition marked, and
    /// running this again finishes it.
    func deleteApp(_ app: String, batchSize: Int, now: @Sendable () -> Date) async throws -> AppDeletion {
        var deletion = AppDeletion()
        let started = now()
        let (hadDefinition, unfinished) = try await database.write(.durable) { [sql] connection -> (Bool, [String]) in
            let marked = !(try await connection.query(sql.markAppDeleting, [.text(app), .int(started.milliseconds)])).isEmpty
            try await connection.query(sql.deleteAppKeys, [.text(app)])
            try await connection.query(sql.raiseAppCatalogVersion)
            return (marked, try await connection.query(sql.unfinishedAppNotifications, [.text(app)]).compactMap { $0.text(0) })
        }
        deletion.hadDefinition = hadDefinition
        // Cancelled as `DELETE /v1/notifications/{id}` cancels: nothing more is claimed, and what a
        // worker holds finishes (its outcome then finds no row to record in).
        for chunk in Self.chunks(unfinished, of: 100) {
            try await database.write(.durable) { [self] connection in
                for id in chunk { try await stop(id, reason: Unsendable.cancelled.reason, now: started, on: connection) }
            }
        }
        deletion.cancelledNotifications = unfinished.count
        let limit = max(1, batchSize)
        // Bounded: each pass deletes rows, and an app has fewer than 10¹⁰ of them.
        for _ in 0..<1_000_000 {
            let ids = try await database.read { [sql] connection in
                try await connection.query(sql.appNotifications, [.text(app), .int(100)]).compactMap { $0.text(0) }
            }
            if ids.isEmpty { break }
            for _ in 0..<1_000_000 {
                let deleted = try await database.write(.bookkeeping) { [sql] connection in
                    try await connection.query(sql.deleteNotificationDeliveries, [.texts(ids), .int(limit)]).count
                }
                if deleted < limit { break }
            }
            // The notifications last, with what a completion under way wrote since.
            let time = now().milliseconds
            try await database.write(.bookkeeping) { [sql] connection in
                try await connection.query(sql.deleteAllNotificationDeliveries, [.texts(ids)])
                for statement in sql.deleteNotifications { try await connection.query(statement, [.texts(ids)]) }
                try await connection.query(sql.markAppDeleting, [.text(app), .int(time)])
            }
            deletion.notifications += ids.count
        }
        for _ in 0..<1_000_000 {
            let time = now().milliseconds
            let deleted = try await database.write(.bookkeeping) { [sql] connection -> Int in
                let rows = try await connection.query(sql.appDevices, [.text(app), .int(limit)])
                guard !rows.isEmpty else { return 0 }
                let devices = SQLValue.rows(rows.map { [$0[0], $0[1]] })
                for statement in sql.deleteDevices { try await connection.query(statement, [.text(app), devices]) }
                try await connection.query(sql.markAppDeleting, [.text(app), .int(time)])
                return rows.count
            }
            deletion.devices += deleted
            if deleted < limit { break }
        }
        for statement in sql.deleteAppRows {
            for _ in 0..<1_000_000 {
                let deleted = try await database.write(.bookkeeping) { connection in
                    try await connection.query(statement, [.text(app), .int(limit)]).count
                }
                if deleted < limit { break }
            }
        }
        try await database.write(.durable) { [sql] connection in
            try await connection.query(sql.deleteAppDefinition, [.text(app)])
            try await connection.query(sql.deleteAppKeys, [.text(app)])
            try await connection.query(sql.raiseAppCatalogVersion)
        }
        return deletion
    }

    static func appDefinitionSummary(_ row: SQLRow) -> AppDefinitionSummary {
        AppDefinitionSummary(
            id: row.text(AppDefinitionColumn.id) ?? "", sealedWith: row.text(AppDefinitionColumn.sealedWith) ?? "",
            createdAt: Date(milliseconds: row.int(AppDefinitionColumn.createdAt) ?? 0), updatedAt: Date(milliseconds: row.int(AppDefinitionColumn.updatedAt) ?? 0),
            deletingSince: row.int(AppDefinitionColumn.deletingSince).map { Date(milliseconds: $0) })
    }

    /// A key's digest as the table keeps it: lower-case hex.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        func value(_ digit: UInt8) -> UInt8 {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            default: 0
            }
        }
        return stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }
}
