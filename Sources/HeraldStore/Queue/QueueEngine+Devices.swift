import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device registry.
extension QueueEngine {
    func register(_ registration: DeviceRegistration, app: String, now: Date) async throws -> (device: Device, created: Bool) {
        try await database.write(.durable) { [self] connection in
            let existed = try await !connection.query(sql.selectDevice, Self.device(registration.token, of: app)).isEmpty
            try await upsert([registration], app: app, now: now, on: connection)
            let row = try await connection.query(sql.selectDevice, Self.device(registration.token, of: app))
            return (Self.device(row[0]), !existed)
        }
    }

    /// Registers a batch with one statement per table; tags go first, so a batch cut short
    /// leaves devices as they were, and running it again finishes it. The rows are made by
    /// ``DeviceRows/init(_:devicesInKeyOrder:)`` beforehand (an import makes the next batch's
    /// while this one is written), so the connection is held for the statements alone.
    func register(batch rows: DeviceRows, app: String, now: Date) async throws {
        try await database.write(.statements) { [self] connection in try await upsert(rows, app: app, now: now, on: connection) }
    }

    /// After a bulk registration of `count` devices (``SQLDatabase/settleDevices()``); a few
    /// devices are left to autovacuum.
    func settle(afterRegistering count: Int) async {
        if count >= Self.settleAfter { await database.settleDevices() }
    }
    static let settleAfter = 10_000

    /// The rows of `registrations` as this engine's database writes them.
    func rows(_ registrations: [DeviceRegistration]) -> DeviceRows {
        DeviceRows(registrations, devicesInKeyOrder: database.dialect.devicesInKeyOrder)
    }

    func upsert(_ registrations: [DeviceRegistration], app: String, now: Date, on connection: any SQLConnection) async throws {
        try await upsert(rows(registrations), app: app, now: now, on: connection)
    }

    private func upsert(_ rows: DeviceRows, app: String, now: Date, on connection: any SQLConnection) async throws {
        if !rows.tagged.isEmpty {
            try await connection.query(sql.deleteTags, [.text(app), .texts(rows.tagged)])
            try await connection.query(sql.insertTags, [.text(app), .rows(rows.tagPairs)])
        }
        // One statement for the whole batch (the facade cuts a stream into batches): on SQLite
        // each statement commits on its own, and a page changed by many rows of one commit is
        // written once, by many commits once each.
        if rows.full.bytes.count > 2 { try await connection.query(sql.upsertDevices(settingKind: false), [.text(app), .json(rows.full), .int(now.milliseconds)]) }
        if rows.kinded.bytes.count > 2 { try await connection.query(sql.upsertDevices(settingKind: true), [.text(app), .json(rows.kinded), .int(now.milliseconds)]) }
        if rows.bare.bytes.count > 2 { try await connection.query(sql.upsertBareDevices, [.text(app), .json(rows.bare), .int(now.milliseconds)]) }
    }

    func device(app: String, token: String) async throws -> Device? {
        try await database.read { [self] connection in
            try await connection.query(sql.selectDevice, Self.device(token, of: app)).first.map(Self.device)
        }
    }

    func deleteDevice(app: String, token: String) async throws -> Bool {
        try await database.write(.durable) { [self] connection in
            let deleted = try await connection.query(sql.deleteDevice, Self.device(token, of: app))
            try await connection.query(sql.deleteDeviceTags, [.text(app), .text(token)])
            return !deleted.isEmpty
        }
    }

    func devices(app: String, filter: DeviceFilter, limit: Int, after: String?) async throws -> Page<Device> {
        try await database.read { [self] connection in
            var binds: [SQLValue] = [.text(app), .text(after ?? ""), .int(limit + 1)]
            if database.dialect.devicesInKeyOrder { binds.append(.int(after.flatMap { $0.isEmpty ? nil : KeySpace.hash($0) } ?? -1)) }
            if let tag = filter.tag { binds.append(.text(tag)) }
            if let status = filter.status { binds.append(.code(DeviceCode(status))) }
            if let user = filter.user { binds.append(.text(user)) }
            if let kind = filter.kind { binds.append(.code(KindCode(kind))) }
            if let environment = filter.environment { binds += [.code(EnvironmentCode(environment)), .code(EnvironmentCode(filter.defaultEnvironment))] }
            let statement = sql.listDevices(
                status: filter.status != nil, user: filter.user != nil, tag: filter.tag != nil, kind: filter.kind != nil, environment: filter.environment != nil,
                platform: filter.platform
            )
            var devices = try await connection.query(statement, binds).map(Self.device)
            let more = devices.count > limit
            if more { devices.removeLast() }
            return Page(items: devices, next: more ? devices.last?.token : nil)
        }
    }

    func countDevices(app: String, status: DeviceStatus?) async throws -> Int {
        try await database.read { [self] connection in
            let binds: [SQLValue] = [.text(app)] + (status.map { [.code(DeviceCode($0))] } ?? [])
            return try await connection.query(sql.countDevices(status: status != nil), binds).first?.int(0, default: 0) ?? 0
        }
    }

    func invalidate(app: String, reports: [Invalidation], now: Date) async throws -> Int {
        try await database.write(.durable) { [self] connection in try await invalidate(app: app, reports, now: now, on: connection) }
    }

    /// Marks devices unregistered or invalid by what APNs reported (Apple's timestamp rule for
    /// `Unregistered`; a report without Apple's timestamp counts from `now`). Returns how many changed.
    func invalidate(app: String, _ reports: [Invalidation], now: Date, on connection: any SQLConnection) async throws -> Int {
        let gone = reports.filter { Invalidation.status(for: $0.reason) == .unregistered }
        let bad = reports.filter { Invalidation.status(for: $0.reason) == .invalid }
        var retired: [SQLRow] = []
        for part in Self.chunks(gone) {
            let rows: [[SQLValue]] = part.map { [.text($0.token), .text($0.reason), .int(($0.timestamp ?? now).milliseconds), .int(KeySpace.hash($0.token))] }
            retired += try await connection.query(sql.unregisterDevices, [.text(app), .rows(rows)])
        }
        for part in Self.chunks(bad) {
            retired += try await connection.query(sql.invalidateDevices, [.text(app), .rows(part.map { [.text($0.token), .text($0.reason), .int(KeySpace.hash($0.token))] })])
        }
        if !retired.isEmpty {
            let reports = Dictionary(reports.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
            try await recordRetired(app: app, retired, reports: reports, now: now, on: connection)
        }
        return retired.count
    }

    /// The parameters that find device `token` of `app`: app, token and the token's key.
    static func device(_ token: String, of app: String) -> [SQLValue] { [.text(app), .text(token), .int(KeySpace.hash(token))] }

    /// A device from a row of ``QueueStatements/deviceColumns``.
    static func device(_ row: SQLRow) -> Device {
        typealias Column = DeviceColumn
        let user = row.text(Column.user)
        return Device(
            app: row.text(Column.app) ?? "", token: row.text(Column.token) ?? "", user: user?.isEmpty == false ? user : nil,
            tags: TagList.decode(row.text(Column.tags)), badge: row.int(Column.badge, default: 0),
            status: DeviceCode(code: row.int(Column.status))?.status ?? .active, reason: row.text(Column.reason),
            invalidatedAt: row.int(Column.invalidatedAt).map(Date.init(milliseconds:)), createdAt: Date(milliseconds: row.int(Column.createdAt) ?? 0),
            updatedAt: Date(milliseconds: row.int(Column.updatedAt) ?? 0), kind: KindCode(code: row.int(Column.kind))?.kind ?? .alert,
            activityType: row.text(Column.activityType), environment: EnvironmentCode.environment(row.int(Column.environment)),
            address: row.text(Column.address).map { DeviceAddress(unchecked: PlatformCode.platform(row.int(Column.platform)), stored: $0) },
            timeZone: row.text(Column.timeZone), locale: row.text(Column.locale).flatMap { $0.isEmpty ? nil : $0 }, preferences: PreferenceList.decode(row.text(Column.preferences))
        )
    }

    /// The addresses of `Address`'s platform among `tokens` of `app`, by device ID (the others
    /// are another platform's).
    func addresses<Address: PlatformAddress>(_ type: Address.Type, app: String, tokens: [String]) async throws -> [String: Address] {
        try await database.read { [self] connection in
            var addresses: [String: Address] = [:]
            let statement = sql.addresses(Address.platform)
            for part in Self.chunks(tokens) {
                for row in try await connection.query(statement, [.text(app), .devices(part)]) {
                    if let token = row.text(0), let stored = row.text(1), let address = Address(stored: stored) { addresses[token] = address }
                }
            }
            return addresses
        }
    }

    /// Gives devices and tags stored before migration 4 their hash, a batch at a time in key
    /// order (each batch its own transaction: no long lock).
    func fillHashes() async throws {
        for (select, table) in [(sql.unkeyedDevices, "devices"), (sql.unkeyedTags, "device_tags")] {
            var cursor = (app: "", token: "")
            for _ in 0..<1_000_000 {
                let last = try await database.write(.durable) { [self, cursor] connection -> (app: String, token: String)? in
                    let rows = try await connection.query(select, [.text(cursor.app), .text(cursor.token), .int(Self.rowsPerStatement)])
                    guard let last = rows.last else { return nil }
                    let keyed: [[SQLValue]] = rows.map { row in
                        let token = row.text(1) ?? ""
                        return [.text(row.text(0) ?? ""), .text(token), .int(KeySpace.hash(token))]
                    }
                    try await connection.query(sql.setKeys(table), [.rows(keyed)])
                    return (last.text(0) ?? "", last.text(1) ?? "")
                }
                guard let last else { break }
                cursor = last
            }
        }
    }
}
