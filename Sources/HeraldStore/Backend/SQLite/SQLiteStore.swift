import HeraldCore
import Logging
import NIOCore
import SQLiteNIO
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The embedded backend: one SQLite file (WAL journal), one connection used by one transaction at
/// a time. Workers of one process share it; several processes need PostgreSQL.
final class SQLiteStore: StoreBackend {
    private let path: String
    private let logger: Logger
    private let access = SerialAccess()
    private let work = WorkSignal()
    private let connection = Mutex<SQLiteConnection?>(nil)

    /// Rows per multi-row statement: SQLite takes up to 32,766 parameters.
    static let rowsPerStatement = 500

    /// One backend per file in a process: stores opened on the same file share its connection,
    /// its transactions' order and its work signal, so they behave as one.
    private static let open = Mutex<[String: SQLiteStore]>([:])

    static func shared(path: String, logger: Logger) -> SQLiteStore {
        let key = path == ":memory:" ? ":memory:\(UUID().uuidString)" : URL(fileURLWithPath: path).standardizedFileURL.path
        return open.withLock { stores in
            if let store = stores[key] { return store }
            let store = SQLiteStore(path: path, logger: logger)
            stores[key] = store
            return store
        }
    }

    private init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    func run() async {}

    /// Closes the connection once no transaction is running; the next use opens it again.
    func close() async throws {
        try await access.run {
            let open = connection.withLock { connection in
                defer { connection = nil }
                return connection
            }
            try await open?.close()
        }
    }

    // MARK: Connection and transactions

    private func open() async throws -> SQLiteConnection {
        if let open = connection.withLock({ $0 }) { return open }
        let storage: SQLiteConnection.Storage = path == ":memory:" ? .memory : .file(path: path)
        let opened: SQLiteConnection
        do {
            opened = try await SQLiteConnection.open(storage: storage, logger: logger)
        } catch {
            throw StoreError(.unavailable, "cannot open the SQLite database \(path): \(error)")
        }
        do {
            // WAL: readers do not wait for the writer; NORMAL: a commit survives the process being
            // killed (not a power cut). Foreign keys are not used.
            // busy_timeout: another process holding the write lock is waited for (sleeping, up to
            // 10 s), not spun on.
            let pragmas = [
                "PRAGMA busy_timeout = 10000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA temp_store = MEMORY",
                "PRAGMA cache_size = -32000",
            ]
            for pragma in pragmas {
                _ = try await opened.query(pragma)
            }
        } catch {
            // A connection is closed before it is dropped, whatever failed.
            try? await opened.close()
            throw StoreError(.unavailable, "cannot set up the SQLite database \(path): \(error)")
        }
        connection.withLock { $0 = opened }
        return opened
    }

    /// Runs `body` alone on the connection.
    func exclusive<Result: Sendable>(_ body: (SQLiteConnection) async throws -> Result) async throws -> Result {
        try await access.run {
            let connection = try await open()
            do {
                return try await body(connection)
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.databaseError, "SQLite \(path): \(error)")
            }
        }
    }

    /// Runs `body` in a write transaction.
    func transaction<Result: Sendable>(_ body: (SQLiteConnection) async throws -> Result) async throws -> Result {
        try await exclusive { connection in
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                let result = try await body(connection)
                _ = try await connection.query("COMMIT")
                return result
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        }
    }

    // MARK: Schema

    func migrate() async throws {
        try await transaction { connection in
            _ = try await connection.query(SQLiteSchema.createVersions)
            let current = try await connection.query(SQLiteSchema.currentVersion).first?.column("version")?.exactInteger ?? 0
            let known = SQLiteSchema.migrations.count
            guard current <= known else {
                throw StoreError(
                    .newerSchema,
                    "the database \(path) was migrated by a newer Herald (schema \(current); this one knows up to \(known)): upgrade Herald"
                )
            }
            for version in (current + 1)...max(known, current + 1) where version <= known {
                for statement in SQLiteSchema.migrations[version - 1] { _ = try await connection.query(statement) }
                _ = try await connection.query(SQLiteSchema.recordVersion, [.integer(version), .integer(Int(Date().milliseconds))])
                logger.info("store migrated", metadata: ["schema": "\(version)", "database": "\(path)"])
            }
        }
    }

    func checkReady() async throws {
        try await exclusive { connection in
            let version = try await connection.query(SQLiteSchema.currentVersion).first?.column("version")?.exactInteger ?? 0
            guard version == SQLiteSchema.migrations.count else {
                throw StoreError(.unavailable, "the database \(path) is at schema \(version), not \(SQLiteSchema.migrations.count): migrate it")
            }
        }
    }

    // MARK: Devices

    func register(_ registration: DeviceRegistration, app: String, now: Date) async throws -> (device: Device, created: Bool) {
        try await transaction { connection in
            let existed = try await !connection.query(SQLiteSchema.selectDevice, [.text(app), .text(registration.token)]).isEmpty
            try await upsert([registration], app: app, now: now, on: connection)
            let row = try await connection.query(SQLiteSchema.selectDevice, [.text(app), .text(registration.token)])
            return (try Self.device(row[0]), !existed)
        }
    }

    /// A bulk batch is one statement per table, each its own transaction (autocommit): inside an
    /// explicit transaction SQLite would copy every page a multi-row statement touches into a
    /// statement journal, which for random tokens is nearly every page. Each statement is atomic;
    /// tags go first, so a batch cut short leaves devices as they were, and running it again
    /// finishes it.
    func register(batch: [DeviceRegistration], app: String, now: Date) async throws {
        try await exclusive { connection in try await upsert(batch, app: app, now: now, on: connection) }
    }

    private func upsert(_ registrations: [DeviceRegistration], app: String, now: Date, on connection: SQLiteConnection) async throws {
        // One JSON array for the part: [token, user, tags, badge], null keeping the stored value;
        // a cleared user is "" (NULL means keep).
        var rows = JSONWriter(capacity: registrations.count * 100)
        rows.beginArray()
        var tagged = JSONWriter(capacity: 64)
        tagged.beginArray()
        var pairs = JSONWriter(capacity: 64)
        pairs.beginArray()
        for registration in registrations {
            rows.beginArray()
            rows.string(registration.token)
            switch registration.user {
            case .none: rows.null()
            case .some(.none): rows.string("")
            case .some(.some(let user)): rows.string(user)
            }
            if let tags = registration.tags {
                rows.string(StoreCodes.encode(tags: tags))
                tagged.string(registration.token)
                for tag in tags {
                    pairs.beginArray()
                    pairs.string(registration.token)
                    pairs.string(tag)
                    pairs.endArray()
                }
            } else {
                rows.null()
            }
            if let badge = registration.badge { rows.int(badge) } else { rows.null() }
            rows.endArray()
        }
        rows.endArray()
        tagged.endArray()
        pairs.endArray()
        if registrations.contains(where: { $0.tags != nil }) {
            _ = try await connection.query(SQLiteSchema.deleteTags, [.text(app), .text(String(decoding: tagged.bytes, as: UTF8.self))])
            _ = try await connection.query(SQLiteSchema.insertTags, [.text(app), .text(String(decoding: pairs.bytes, as: UTF8.self))])
        }
        _ = try await connection.query(
            SQLiteSchema.upsertDevices, [.text(app), .text(String(decoding: rows.bytes, as: UTF8.self)), .integer(Int(now.milliseconds))]
        )
    }

    func device(app: String, token: String) async throws -> Device? {
        try await exclusive { connection in
            try await connection.query(SQLiteSchema.selectDevice, [.text(app), .text(token)]).first.map(Self.device)
        }
    }

    func deleteDevice(app: String, token: String) async throws -> Bool {
        try await transaction { connection in
            let existed = try await !connection.query(SQLiteSchema.selectDevice, [.text(app), .text(token)]).isEmpty
            _ = try await connection.query(SQLiteSchema.deleteDevice, [.text(app), .text(token)])
            _ = try await connection.query(SQLiteSchema.deleteDeviceTags, [.text(app), .text(token)])
            return existed
        }
    }

    func devices(app: String, filter: DeviceFilter, limit: Int, after: String?) async throws -> Page<Device> {
        try await exclusive { connection in
            var binds: [SQLiteData] = []
            if let tag = filter.tag { binds.append(.text(tag)) }
            binds.append(.text(app))
            binds.append(.text(after ?? ""))
            if let status = filter.status { binds.append(.integer(StoreCodes.code(status))) }
            if let user = filter.user { binds.append(.text(user)) }
            binds.append(.integer(limit + 1))
            let sql = SQLiteSchema.listDevices(status: filter.status != nil, user: filter.user != nil, tag: filter.tag != nil)
            var devices = try await connection.query(sql, binds).map(Self.device)
            let more = devices.count > limit
            if more { devices.removeLast() }
            return Page(items: devices, next: more ? devices.last?.token : nil)
        }
    }

    func countDevices(app: String, status: DeviceStatus?) async throws -> Int {
        try await exclusive { connection in
            let binds: [SQLiteData] = [.text(app)] + (status.map { [.integer(StoreCodes.code($0))] } ?? [])
            return try await connection.query(SQLiteSchema.countDevices(status: status != nil), binds).first?.column("count")?.exactInteger ?? 0
        }
    }

    func invalidate(app: String, reports: [Invalidation], now: Date) async throws -> Int {
        try await transaction { connection in try await invalidate(app: app, reports, on: connection) }
    }

    private func invalidate(app: String, _ reports: [Invalidation], on connection: SQLiteConnection) async throws -> Int {
        var changed = 0
        for report in reports {
            switch Invalidation.status(for: report.reason) {
            case .unregistered:
                let timestamp = Int((report.timestamp ?? Date()).milliseconds)
                _ = try await connection.query(
                    SQLiteSchema.unregisterDevice, [.text(report.reason), .integer(timestamp), .text(app), .text(report.token), .integer(timestamp)]
                )
            case .invalid:
                _ = try await connection.query(SQLiteSchema.invalidateDevice, [.text(report.reason), .text(app), .text(report.token)])
            case .active, nil:
                continue
            }
            changed += try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
        }
        return changed
    }

    static func device(_ row: SQLiteRow) throws -> Device {
        let user = row.column("user_id")?.string
        return Device(
            app: row.column("app")?.string ?? "",
            token: row.column("token")?.string ?? "",
            user: user?.isEmpty == false ? user : nil,
            tags: StoreCodes.decode(tags: row.column("tags")?.string),
            badge: row.column("badge")?.exactInteger ?? 0,
            status: StoreCodes.deviceStatus(row.column("status")?.exactInteger ?? 0),
            reason: row.column("reason")?.string,
            invalidatedAt: row.column("invalidated_at")?.exactInteger.map { Date(milliseconds: Int64($0)) },
            createdAt: Date(milliseconds: Int64(row.column("created_at")?.exactInteger ?? 0)),
            updatedAt: Date(milliseconds: Int64(row.column("updated_at")?.exactInteger ?? 0))
        )
    }

    // MARK: Notifications

    func enqueue(_ request: NotificationRequest, id: String, deadline: Date, now: Date) async throws -> (notification: StoredNotification, created: Bool) {
        let result = try await transaction { connection -> (StoredNotification, Bool) in
            if let key = request.idempotencyKey,
                let existing = try await connection.query(SQLiteSchema.selectByIdempotencyKey, [.text(request.app), .text(key)]).first
            {
                return (try await notification(existing, on: connection), false)
            }
            let time = Int(now.milliseconds)
            var targeted = 0
            var deliveries: [(token: String, state: Int, reason: String?)] = []
            switch request.audience {
            case .tokens(let tokens):
                deliveries = try await explicitDeliveries(Array(Set(tokens)).sorted(), app: request.app, on: connection)
            case .users(let users):
                for part in Self.chunks(users, of: Self.rowsPerStatement) {
                    let rows = try await connection.query(SQLiteSchema.devicesOfUsers(users: part.count), [.text(request.app)] + part.map { .text($0) })
                    deliveries += rows.compactMap { $0.column("token")?.string }.map { ($0, StoreCodes.pending, nil) }
                }
            case .tags(let tags):
                targeted = try await connection.query(SQLiteSchema.countTagged(tags: tags.count), [.text(request.app)] + tags.map { .text($0) })
                    .first?.column("count")?.exactInteger ?? 0
            case .all:
                targeted = try await connection.query(SQLiteSchema.countActive, [.text(request.app)]).first?.column("count")?.exactInteger ?? 0
            }
            if !request.audience.isRange { targeted = deliveries.count }
            let audience = StoreCodes.encode(request.audience)
            _ = try await connection.query(SQLiteSchema.insertNotification, [
                .text(id), .text(request.app), .integer(audience.kind), .text(audience.values), .blob(ByteBuffer(bytes: request.payload)),
                .text(request.pushType.rawValue), request.priority.map { .integer($0.rawValue) } ?? .null,
                request.expiration.map { .integer($0.unixSeconds) } ?? .null, request.collapseID.map { .text($0) } ?? .null,
                .integer(StoreCodes.code(request.badge)), request.idempotencyKey.map { .text($0) } ?? .null,
                .integer(targeted), .integer(Int(deadline.milliseconds)), .integer(time),
            ])
            for part in Self.chunks(deliveries, of: Self.rowsPerStatement) {
                var binds: [SQLiteData] = []
                for delivery in part {
                    binds += [.text(id), .text(delivery.token), .integer(delivery.state), .integer(time), delivery.reason.map { .text($0) } ?? .null]
                    binds.append(delivery.state == StoreCodes.pending ? .null : .integer(time))
                }
                _ = try await connection.query(SQLiteSchema.insertDeliveries(rows: part.count), binds)
            }
            // Devices the store already knows are gone are rejected with the reason on record.
            for (reason, count) in Dictionary(grouping: deliveries.filter { $0.state == StoreCodes.rejected }, by: { $0.reason ?? "" }).mapValues(\.count) {
                _ = try await connection.query(SQLiteSchema.addReason, [.text(id), .text(reason), .integer(count)])
                _ = try await connection.query(SQLiteSchema.addCounts, [.integer(0), .integer(count), .integer(0), .text(id)])
            }
            if request.audience.isRange {
                for (number, range) in StoreCodes.ranges.enumerated() {
                    _ = try await connection.query(SQLiteSchema.insertSegment, [
                        .text(id), .integer(number), range.upper.map { .text($0) } ?? .null, .text(range.cursor), .integer(time),
                    ])
                }
            }
            try await finishIfDone(id, now: now, on: connection)
            let stored = try await connection.query(SQLiteSchema.selectNotification, [.text(id)])
            return (try await notification(stored[0], on: connection), true)
        }
        if result.1 { work.signal() }
        return result
    }

    /// One delivery row per token: pending, or rejected at once when the store knows the device is gone.
    private func explicitDeliveries(_ tokens: [String], app: String, on connection: SQLiteConnection) async throws -> [(token: String, state: Int, reason: String?)] {
        var known: [String: (status: Int, reason: String?)] = [:]
        for part in Self.chunks(tokens, of: Self.rowsPerStatement) {
            for row in try await connection.query(SQLiteSchema.deviceStatuses(tokens: part.count), [.text(app)] + part.map { .text($0) }) {
                known[row.column("token")?.string ?? ""] = (row.column("status")?.exactInteger ?? 0, row.column("reason")?.string)
            }
        }
        return tokens.map { token in
            guard let device = known[token], device.status != 0 else { return (token, StoreCodes.pending, nil) }
            return (token, StoreCodes.rejected, device.reason ?? "Unregistered")
        }
    }

    func notification(id: String) async throws -> StoredNotification? {
        try await exclusive { connection in
            guard let row = try await connection.query(SQLiteSchema.selectNotification, [.text(id)]).first else { return nil }
            return try await notification(row, on: connection)
        }
    }

    private func notification(_ row: SQLiteRow, on connection: SQLiteConnection) async throws -> StoredNotification {
        let id = row.column("id")?.string ?? ""
        var rejected: [String: Int] = [:]
        for reason in try await connection.query(SQLiteSchema.selectReasons, [.text(id)]) {
            rejected[reason.column("reason")?.string ?? ""] = reason.column("count")?.exactInteger ?? 0
        }
        let payload = row.column("payload")?.blob.map { Array($0.readableBytesView) } ?? []
        let request = NotificationRequest(
            app: row.column("app")?.string ?? "",
            audience: StoreCodes.decode(kind: row.column("audience_kind")?.exactInteger ?? 3, values: row.column("audience")?.string ?? ""),
            payload: payload,
            pushType: PushType(rawValue: row.column("push_type")?.string ?? "alert") ?? .alert,
            priority: row.column("priority")?.exactInteger.flatMap(PushPriority.init(rawValue:)),
            expiration: row.column("expiration")?.exactInteger.flatMap { try? PushExpiration(unixSeconds: $0) },
            collapseID: row.column("collapse_id")?.string,
            badge: StoreCodes.badgeMode(row.column("badge_mode")?.exactInteger ?? 0),
            idempotencyKey: row.column("idempotency_key")?.string
        )
        return StoredNotification(
            id: id, request: request,
            status: StoreCodes.notificationStatus(row.column("status")?.exactInteger ?? 0),
            counts: NotificationCounts(
                targeted: row.column("targeted")?.exactInteger ?? 0, accepted: row.column("accepted")?.exactInteger ?? 0, rejected: rejected,
                failed: row.column("failed")?.exactInteger ?? 0
            ),
            createdAt: Date(milliseconds: Int64(row.column("created_at")?.exactInteger ?? 0)),
            finishedAt: row.column("finished_at")?.exactInteger.map { Date(milliseconds: Int64($0)) }
        )
    }

    func deliveries(notificationID: String, outcome: DeliveryRecord.Outcome?, limit: Int, after: String?) async throws -> Page<DeliveryRecord> {
        try await exclusive { connection in
            var binds: [SQLiteData] = [.text(notificationID), .text(after ?? "")]
            if let outcome { binds.append(.integer(StoreCodes.deliveryState(outcome))) }
            binds.append(.integer(limit + 1))
            var records = try await connection.query(SQLiteSchema.listDeliveries(outcome: outcome != nil), binds).compactMap { row -> DeliveryRecord? in
                guard let outcome = StoreCodes.outcome(row.column("state")?.exactInteger ?? -1) else { return nil }
                return DeliveryRecord(
                    token: row.column("token")?.string ?? "", outcome: outcome, reason: row.column("reason")?.string,
                    apnsID: row.column("apns_id")?.string, at: Date(milliseconds: Int64(row.column("finished_at")?.exactInteger ?? 0))
                )
            }
            let more = records.count > limit
            if more { records.removeLast() }
            return Page(items: records, next: more ? records.last?.token : nil)
        }
    }

    func cancel(id: String, now: Date) async throws -> StoredNotification? {
        try await transaction { connection in
            guard try await !connection.query(SQLiteSchema.selectNotification, [.text(id)]).isEmpty else { return nil }
            try await stop(id, reason: Unsendable.cancelled.reason, now: now, on: connection)
            let row = try await connection.query(SQLiteSchema.selectNotification, [.text(id)])
            return try await notification(row[0], on: connection)
        }
    }

    /// Cancels a notification still queued or sending: its unsent deliveries fail with `reason`
    /// and its unread ranges end.
    private func stop(_ id: String, reason: String, now: Date, on connection: SQLiteConnection) async throws {
        let time = SQLiteData.integer(Int(now.milliseconds))
        _ = try await connection.query(SQLiteSchema.cancelNotification, [time, .text(id)])
        guard try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0 > 0 else { return }
        _ = try await connection.query(SQLiteSchema.cancelDeliveries, [.text(reason), time, .text(id)])
        let cancelled = try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
        _ = try await connection.query(SQLiteSchema.addCounts, [.integer(0), .integer(0), .integer(cancelled), .text(id)])
        _ = try await connection.query(SQLiteSchema.cancelSegments, [.text(id)])
    }

    func leasedWork(notificationID: String, now: Date) async throws -> Int {
        try await exclusive { connection in
            try await connection.query(SQLiteSchema.leasedWork, [.text(notificationID), .integer(Int(now.milliseconds))])
                .first?.column("leased")?.exactInteger ?? 0
        }
    }

    // MARK: Queue

    /// How many claims in a row may find only work that cannot be sent before one returns empty.
    static let claimAttempts = 8

    func claim(owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date) async throws -> [WorkBatch] {
        for _ in 0..<Self.claimAttempts {
            let (batches, failed) = try await claimOnce(owner: owner, limit: limit, includeRanges: includeRanges, leaseUntil: leaseUntil, now: now)
            if !batches.isEmpty || !failed { return batches }
        }
        return []
    }

    /// One claim; work that cannot be sent is failed in the same transaction (whether some was).
    private func claimOnce(owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date) async throws -> ([WorkBatch], Bool) {
        try await transaction { connection in
            let time = Int(now.milliseconds)
            let lease = Int(leaseUntil.milliseconds)
            var batches: [WorkBatch] = []
            var unsendable: [UnsendableWork] = []
            // Single deliveries first: a notification to one device does not wait behind a broadcast.
            let due = try await connection.query(SQLiteSchema.readyDeliveries, [.integer(time), .integer(limit)])
            if !due.isEmpty {
                let ids = due.compactMap { $0.column("id")?.exactInteger }
                _ = try await connection.query(SQLiteSchema.leaseDeliveries(count: ids.count), [.text(owner), .integer(lease)] + ids.map { .integer($0) })
                let byNotification = Dictionary(grouping: due) { $0.column("notification_id")?.string ?? "" }
                let notifications = try await queued(Array(byNotification.keys), on: connection)
                for (notificationID, rows) in byNotification {
                    let notification: QueuedNotification
                    switch notifications[notificationID] ?? .failure(.quarantined("notification \(notificationID) does not exist")) {
                    case .failure(let problem):
                        let ids = rows.compactMap { $0.column("id")?.exactInteger }.map { (Int64($0), problem.reason) }
                        unsendable.append(UnsendableWork(notificationID: notificationID, notification: problem, deliveries: ids))
                        continue
                    case .success(let stored):
                        notification = stored
                    }
                    var items: [WorkItem] = []
                    var ids: [Int64] = []
                    var resend = false
                    var bad = UnsendableWork(notificationID: notificationID)
                    for row in rows {
                        let id = Int64(row.column("id")?.exactInteger ?? 0)
                        // A badge column holding what no claim writes (a real number, text, out of range).
                        let stored = row.column("badge").flatMap { $0.isNull ? nil : $0 }
                        var badge = stored?.exactInteger
                        let problem = stored != nil && badge == nil
                            ? Unsendable.quarantined("badge \(stored!) is not a number") : QueuedNotification.badgeProblem(badge)
                        guard let token = row.column("token")?.string, problem == nil else {
                            bad.deliveries.append((id, (problem ?? .quarantined("no token")).reason))
                            continue
                        }
                        if notification.badge == .increment, badge == nil {
                            badge = try await raiseBadges([token], above: nil, notification: notification, on: connection)[token] ?? 1
                            _ = try await connection.query(SQLiteSchema.setDeliveryBadge, [.integer(badge!), .integer(Int(id))])
                        }
                        let attempt = (row.column("attempts")?.exactInteger ?? 0) + 1
                        resend = resend || row.column("state")?.exactInteger == StoreCodes.claimed || attempt > 1
                        items.append(WorkItem(token: token, badge: badge, attempt: attempt))
                        ids.append(id)
                    }
                    if !bad.deliveries.isEmpty { unsendable.append(bad) }
                    if !items.isEmpty {
                        batches.append(WorkBatch(notification: notification, items: items, isResend: resend, owner: owner, source: .deliveries(ids)))
                    }
                }
            }
            if includeRanges, batches.isEmpty, unsendable.isEmpty,
                let segment = try await connection.query(SQLiteSchema.readySegment, [.integer(time)]).first
            {
                let notificationID = segment.column("notification_id")?.string ?? ""
                let number = segment.column("number")?.exactInteger ?? 0
                _ = try await connection.query(SQLiteSchema.leaseSegment, [.text(owner), .integer(lease), .integer(time), .text(notificationID), .integer(number)])
                let row = try await connection.query(SQLiteSchema.selectNotification, [.text(notificationID)]).first
                let kind = row?.column("audience_kind")?.exactInteger ?? -1
                var stored = try await queued([notificationID], on: connection)[notificationID] ?? .failure(.quarantined("notification \(notificationID) does not exist"))
                if case .success = stored, !StoreCodes.isAudienceKind(kind) {
                    stored = .failure(.quarantined("notification \(notificationID) has audience kind \(row?.column("audience_kind").map { "\($0)" } ?? "none")"))
                }
                switch stored {
                case .failure(let problem):
                    unsendable.append(UnsendableWork(notificationID: notificationID, notification: problem, segment: number))
                case .success(let notification):
                    let audience = StoreCodes.decode(kind: kind, values: row?.column("audience")?.string ?? "")
                    let cursor = segment.column("cursor")?.string ?? ""
                    let upper = segment.column("upper")?.string
                    let (tokens, last) = try await rangeTokens(
                        app: notification.app, audience: audience, after: cursor, below: upper, limit: limit, on: connection
                    )
                    var badges: [String: Int] = [:]
                    if notification.badge == .increment, !tokens.isEmpty {
                        // Devices up to raised_through were raised by a claim whose lease ran out.
                        badges = try await raiseBadges(tokens, above: segment.column("raised_through")?.string, notification: notification, on: connection)
                        if let last {
                            _ = try await connection.query(SQLiteSchema.raisedThrough, [.text(notificationID), .integer(number), .text(last)])
                        }
                    }
                    let items = tokens.map { WorkItem(token: $0, badge: notification.badge == .increment ? badges[$0] ?? 1 : nil, attempt: 1) }
                    batches.append(
                        WorkBatch(
                            notification: notification, items: items,
                            isResend: segment.column("state")?.exactInteger == StoreCodes.claimed,
                            owner: owner, source: .segment(number: number, after: last ?? cursor, exhausted: tokens.count < limit)
                        )
                    )
                }
            }
            let started = Set(batches.map(\.notification.id))
            if !started.isEmpty {
                _ = try await connection.query(SQLiteSchema.markSending(count: started.count), started.map { .text($0) })
            }
            try await fail(unsendable, owner: owner, now: now, on: connection)
            return (batches, !unsendable.isEmpty)
        }
    }

    /// What workers need of these notifications, by ID, or why their work cannot be sent.
    private func queued(_ ids: [String], on connection: SQLiteConnection) async throws -> [String: Result<QueuedNotification, Unsendable>] {
        var result: [String: Result<QueuedNotification, Unsendable>] = [:]
        for row in try await connection.query(SQLiteSchema.notifications(count: ids.count), ids.map { .text($0) }) {
            let id = row.column("id")?.string ?? ""
            result[id] = QueuedNotification.stored(
                id: id, status: row.column("status")?.exactInteger, app: row.column("app")?.string,
                payload: row.column("payload")?.blob.map { Array($0.readableBytesView) }, pushType: row.column("push_type")?.string,
                priority: row.column("priority")?.exactInteger, expiration: row.column("expiration")?.exactInteger, collapseID: row.column("collapse_id")?.string,
                badgeMode: row.column("badge_mode")?.exactInteger, deadline: row.column("deadline")?.exactInteger.map(Int64.init)
            )
        }
        return result
    }

    /// Fails claimed work that cannot be sent (``Unsendable``).
    private func fail(_ unsendable: [UnsendableWork], owner: String, now: Date, on connection: SQLiteConnection) async throws {
        let time = Int(now.milliseconds)
        for work in unsendable {
            let id = work.notificationID
            let status = try await connection.query(SQLiteSchema.notificationStatus, [.text(id)]).first?.column("status")?.exactInteger
            if let problem = work.notification, let status, status < StoreCodes.done {
                logger.warning("a notification cannot be sent; stopping it", metadata: ["notification": "\(id)", "reason": "\(problem.reason)"])
                try await stop(id, reason: problem.reason, now: now, on: connection)
            }
            var failed = 0
            for (delivery, reason) in work.deliveries {
                _ = try await connection.query(SQLiteSchema.failClaimed, [.text(reason), .integer(time), .integer(Int(delivery)), .text(owner)])
                failed += try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
            }
            _ = try await connection.query(SQLiteSchema.addCounts, [.integer(0), .integer(0), .integer(failed), .text(id)])
            if let number = work.segment {
                _ = try await connection.query(SQLiteSchema.endClaimedSegment, [.text(id), .integer(number), .text(owner)])
            }
            if status != nil { try await finishIfDone(id, now: now, on: connection) }
        }
    }

    /// The next devices of a range (in no particular order), and the greatest of them.
    private func rangeTokens(
        app: String, audience: Audience, after cursor: String, below upper: String?, limit: Int, on connection: SQLiteConnection
    ) async throws -> (tokens: [String], last: String?) {
        let upperBind = upper.map { SQLiteData.text($0) } ?? .null
        let rows: [SQLiteRow]
        switch audience {
        case .tags(let tags):
            rows = try await connection.query(
                SQLiteSchema.rangeOfTags(tags: tags.count), [.text(app), .text(cursor), upperBind, .integer(limit)] + tags.map { .text($0) }
            )
        default:
            rows = try await connection.query(SQLiteSchema.rangeOfAll, [.text(app), .text(cursor), upperBind, .integer(limit)])
        }
        return (StoreCodes.tokens(rows.first?.column("tokens")?.string), rows.first?.column("last")?.string)
    }


    /// Raises the badges of `tokens` above `raisedThrough` (all when `nil`) and returns each
    /// device's badge now.
    private func raiseBadges(
        _ tokens: [String], above raisedThrough: String?, notification: QueuedNotification, on connection: SQLiteConnection
    ) async throws -> [String: Int] {
        var badges: [String: Int] = [:]
        for part in Self.chunks(tokens, of: Self.rowsPerStatement) {
            _ = try await connection.query(
                SQLiteSchema.raiseBadges(tokens: part.count), [.text(notification.app), raisedThrough.map { .text($0) } ?? .null] + part.map { .text($0) }
            )
            for row in try await connection.query(SQLiteSchema.badges(tokens: part.count), [.text(notification.app)] + part.map { .text($0) }) {
                badges[row.column("token")?.string ?? ""] = row.column("badge")?.exactInteger ?? 0
            }
        }
        return badges
    }

    func renew(_ batch: WorkBatch, leaseUntil: Date) async throws {
        let (renewed, held) = try await transaction { connection -> (Int, Int) in
            let lease = SQLiteData.integer(Int(leaseUntil.milliseconds))
            var renewed = 0
            switch batch.source {
            case .deliveries(let ids):
                let unique = Array(Set(ids))
                for part in Self.chunks(unique, of: Self.rowsPerStatement) {
                    _ = try await connection.query(
                        SQLiteSchema.renewDeliveries + "(\(SQLiteSchema.placeholders(part.count)))",
                        [lease, .text(batch.owner)] + part.map { .integer(Int($0)) }
                    )
                    renewed += try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
                }
                return (renewed, unique.count)
            case .segment(let number, _, _):
                _ = try await connection.query(SQLiteSchema.renewSegment, [lease, .text(batch.notification.id), .integer(number), .text(batch.owner)])
                renewed = try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
                return (renewed, 1)
            }
        }
        if renewed < held { throw StoreError.leaseLost(batch, renewed: renewed, of: held) }
    }

    func complete(_ batch: WorkBatch, outcomes: [DeliveryOutcome], retryAt: @escaping @Sendable (Int) -> Date, now: Date) async throws {
        let retried = try await transaction { connection -> Bool in
            let id = batch.notification.id
            let time = Int(now.milliseconds)
            let status = try await connection.query(SQLiteSchema.notificationStatus, [.text(id)]).first?.column("status")?.exactInteger ?? StoreCodes.cancelled
            let plan = OutcomePlan(
                outcomes: outcomes, of: batch, cancelled: status == StoreCodes.cancelled,
                retryAt: retryAt, now: now
            )
            var counted = plan
            switch batch.source {
            case .deliveries(let ids):
                // Only rows this worker still leases count: a lease taken over is counted by its new holder.
                let idByToken = Dictionary(zip(batch.items.map(\.token), ids), uniquingKeysWith: { first, _ in first })
                counted = OutcomePlan(outcomes: [], of: batch, cancelled: false, retryAt: retryAt, now: now)
                for row in plan.rows {
                    guard let rowID = idByToken[row.token] else { continue }
                    _ = try await connection.query(SQLiteSchema.finishDelivery, [
                        .integer(row.state), row.reason.map { .text($0) } ?? .null, row.apnsID.map { .text($0) } ?? .null,
                        row.state == StoreCodes.pending ? .null : .integer(time), row.nextAttemptAt.map { .integer(Int($0)) } ?? .null,
                        .integer(Int(rowID)), .text(batch.owner),
                    ])
                    guard try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger == 1 else { continue }
                    switch row.state {
                    case StoreCodes.accepted: counted.accepted += 1
                    case StoreCodes.rejected: counted.rejected[row.reason ?? "", default: 0] += 1
                    case StoreCodes.failed: counted.failed += 1
                    default: break
                    }
                }
            case .segment(let number, let after, let exhausted):
                _ = try await connection.query(SQLiteSchema.advanceSegment, [
                    .text(after), .integer(exhausted ? StoreCodes.segmentDone : StoreCodes.pending), .text(id), .integer(number), .text(batch.owner),
                ])
                guard try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger == 1 else {
                    throw StoreError(.leaseLost, "the lease on a range of notification \(id) ran out and another worker took it")
                }
                let kept = plan.rows.filter { $0.state != StoreCodes.accepted }
                let badges = Dictionary(batch.items.map { ($0.token, $0.badge) }, uniquingKeysWith: { first, _ in first })
                for part in Self.chunks(kept, of: Self.rowsPerStatement / 2) {
                    var binds: [SQLiteData] = []
                    for row in part {
                        binds += [
                            .text(id), .text(row.token), .integer(row.state), .integer(row.state == StoreCodes.pending ? 1 : 0),
                            .integer(Int(row.nextAttemptAt ?? Int64(time))), row.reason.map { .text($0) } ?? .null,
                            row.apnsID.map { .text($0) } ?? .null, row.state == StoreCodes.pending ? .null : .integer(time),
                            (badges[row.token] ?? nil).map { .integer($0) } ?? .null,
                        ]
                    }
                    _ = try await connection.query(SQLiteSchema.insertRangeDeliveries(rows: part.count), binds)
                }
            }
            _ = try await connection.query(SQLiteSchema.addCounts, [
                .integer(counted.accepted), .integer(counted.rejected.values.reduce(0, +)), .integer(counted.failed), .text(id),
            ])
            for (reason, count) in counted.rejected {
                _ = try await connection.query(SQLiteSchema.addReason, [.text(id), .text(reason), .integer(count)])
            }
            _ = try await invalidate(app: batch.notification.app, plan.invalidations, on: connection)
            try await finishIfDone(id, now: now, on: connection)
            return plan.rows.contains { $0.state == StoreCodes.pending }
        }
        if retried { work.signal() }
    }

    /// Marks a notification done when nothing of it is left to send.
    private func finishIfDone(_ id: String, now: Date, on connection: SQLiteConnection) async throws {
        let open = try await connection.query(SQLiteSchema.unfinishedWork, [.text(id)]).first?.column("open")?.exactInteger ?? 1
        guard open == 0 else { return }
        _ = try await connection.query("UPDATE notifications SET status = 1 WHERE id = ? AND status = 0", [.text(id)])
        _ = try await connection.query(SQLiteSchema.finishNotification, [.integer(Int(now.milliseconds)), .text(id)])
    }

    func release(_ batch: WorkBatch) async throws {
        try await transaction { connection in
            switch batch.source {
            case .deliveries(let ids):
                for id in ids { _ = try await connection.query(SQLiteSchema.releaseDelivery, [.integer(Int(id)), .text(batch.owner)]) }
            case .segment(let number, _, _):
                _ = try await connection.query(SQLiteSchema.releaseSegment, [.text(batch.notification.id), .integer(number), .text(batch.owner)])
            }
        }
        work.signal()
    }

    func statistics(now: Date) async throws -> QueueStatistics {
        try await exclusive { connection in
            let row = try await connection.query(SQLiteSchema.statistics).first
            return QueueStatistics(
                pendingDeliveries: row?.column("deliveries")?.exactInteger ?? 0, pendingRanges: row?.column("segments")?.exactInteger ?? 0,
                activeNotifications: row?.column("notifications")?.exactInteger ?? 0
            )
        }
    }

    func purge(finishedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await transaction { connection in
            let time = SQLiteData.integer(Int(cutoff.milliseconds))
            _ = try await connection.query(SQLiteSchema.purgeDeliveries, [time, .integer(limit)])
            var purged = try await connection.query("SELECT changes() AS changed").first?.column("changed")?.exactInteger ?? 0
            if purged < limit {
                let ids = try await connection.query(SQLiteSchema.purgeNotifications, [time, .integer(limit - purged)]).compactMap { $0.column("id")?.string }
                if !ids.isEmpty {
                    for statement in SQLiteSchema.deleteNotifications(count: ids.count) { _ = try await connection.query(statement, ids.map { .text($0) }) }
                    purged += ids.count
                }
            }
            return purged
        }
    }

    func waitForWork(timeout: Duration) async {
        await work.wait(timeout: timeout)
    }

    static func chunks<Element>(_ elements: [Element], of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: elements.count, by: size).map { elements[$0..<min($0 + size, elements.count)] }
    }
}


extension SQLiteData {
    /// The value as an integer, or `nil` when it is none or does not fit one. SQLiteNIO's
    /// `integer` traps on a real number out of range, which a column may hold whatever its type
    /// (written by hand, or by arithmetic that overflowed): one such row must not crash a claim.
    var exactInteger: Int? {
        switch self {
        case .integer(let integer): integer
        case .float(let double): Int(exactly: double.rounded(.towardZero))
        case .text(let text): Int(text)
        case .blob, .null: nil
        }
    }
}
