import HeraldCore
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The scale-out backend: postgres-nio's connection pool, `FOR UPDATE SKIP LOCKED` claims so many
/// processes share one queue, LISTEN/NOTIFY to wake idle workers at once.
final class PostgresStore: StoreBackend {
    private let client: PostgresClient
    private let description: String
    private let logger: Logger
    private let work = WorkSignal()

    init(configuration: StoreURL.Postgres, maximumConnections: Int, logger: Logger) {
        // libpq's meanings: `prefer` and `require` encrypt without checking the certificate,
        // `verify-full` checks it (against `sslrootcert`, else the system's CAs) and the host name.
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        let tls: PostgresClient.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(unverified)
        case .require: tls = .require(unverified)
        case .verifyFull:
            var verified = TLSConfiguration.makeClientConfiguration()
            verified.certificateVerification = .fullVerification
            if let file = configuration.rootCertificateFile { verified.trustRoots = .file(file) }
            tls = .require(verified)
        }
        var client = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.user, password: configuration.password,
            database: configuration.database, tls: tls
        )
        client.options.maximumConnections = max(2, maximumConnections)
        client.options.connectTimeout = .seconds(5)
        self.client = PostgresClient(configuration: client, backgroundLogger: logger)
        self.description = StoreURL.postgres(configuration).description
        self.logger = logger
    }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.listenForWork() }
        }
    }

    func close() async throws {}

    /// Wakes this process's workers when any process queues work, on a connection of its own;
    /// reconnects after a second when the database goes away.
    private func listenForWork() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: PostgresSchema.workChannel) { notifications in
                        for try await _ in notifications { self.work.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("LISTEN for work failed; trying again", metadata: ["error": "\(Self.describe(error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    // MARK: Queries

    /// A value to bind, by PostgreSQL type.
    enum Bind {
        case text(String?)
        case int(Int64?)
        case bytes([UInt8])
        case texts([String])
        case ints([Int64])
        case int32s([Int32])
        case smallints([Int16])
    }

    static func query(_ sql: String, _ values: [Bind] = []) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): if let text { bindings.append(text) } else { bindings.appendNull() }
            case .int(let int): if let int { bindings.append(int) } else { bindings.appendNull() }
            case .bytes(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            case .texts(let texts): bindings.append(texts)
            case .ints(let ints): bindings.append(ints)
            case .int32s(let ints): bindings.append(ints)
            case .smallints(let ints): bindings.append(ints)
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    @discardableResult
    func run(_ sql: String, _ values: [Bind] = [], on connection: PostgresConnection) async throws -> [PostgresRow] {
        try await connection.query(Self.query(sql, values), logger: logger).collect()
    }

    /// Runs `body` in a transaction, with the database's errors as ``StoreError``.
    ///
    /// - Parameter durable: false for the queue's own bookkeeping (claims, completions, leases):
    ///   its commit does not wait for the WAL to reach the disk (`synchronous_commit = off`). A
    ///   database crash may then lose the last fraction of a second of it, which only means a
    ///   lease runs out and a batch is claimed, and sent, again: at least once, as always. What a
    ///   caller is told is stored (registrations, notifications) is always durable.
    func transaction<Result: Sendable>(
        durable: Bool = true, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await withDeadlines { leased in
                try await self.client.withTransaction(logger: self.logger) { connection in
                    leased.set()
                    if !durable { try await self.run("SET LOCAL synchronous_commit = off", on: connection) }
                    return try await body(connection)
                }
            }
        } catch {
            throw Self.storeError(error, database: description)
        }
    }

    func read<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        do {
            return try await withDeadlines { leased in
                try await self.client.withConnection { connection in
                    leased.set()
                    return try await body(connection)
                }
            }
        } catch {
            throw Self.storeError(error, database: description)
        }
    }

    /// How long an operation waits for a connection. The pool waits for ever while the database
    /// is down (it keeps reconnecting); an API caller must hear "unavailable" in seconds instead.
    static let connectionDeadline: Duration = .seconds(5)

    /// How long an operation may take once it holds a connection. A query sent on a connection
    /// the server is closing at that moment (PostgreSQL restarting) can go unanswered for ever:
    /// seen with postgres-nio 1.33 when the server was killed with SIGQUIT mid-transaction.
    /// Every statement Herald runs is bounded (batches of at most a few thousand rows), so a
    /// statement unanswered for 20 s means the connection is gone (the caller retries or hears 503).
    static let operationDeadline: Duration = .seconds(20)

    /// Runs `operation`, which calls `leased.set()` once it holds a connection, and fails with
    /// `unavailable` when it has no connection within ``connectionDeadline`` or no result within
    /// ``operationDeadline``. The operation is then cancelled and left behind, not awaited: a
    /// query that will never be answered must not hold its caller (a worker, an API request).
    private func withDeadlines<Result: Sendable>(
        _ operation: @escaping @Sendable (LeaseFlag) async throws -> Result
    ) async throws -> Result {
        let leased = LeaseFlag()
        let race = DeadlineRace<Result>()
        let description = self.description
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                let timer = Task {
                    try await Task.sleep(for: Self.connectionDeadline)
                    if !leased.isSet {
                        race.finish(.failure(StoreError(.unavailable, "PostgreSQL \(description) gave no connection within \(Self.connectionDeadline): it is down or overloaded")))
                        return
                    }
                    try await Task.sleep(for: Self.operationDeadline - Self.connectionDeadline)
                    race.finish(.failure(StoreError(.unavailable, "PostgreSQL \(description) did not answer within \(Self.operationDeadline): the connection is lost")))
                }
                let work = Task {
                    do {
                        race.finish(.success(try await operation(leased)))
                    } catch {
                        race.finish(.failure(error))
                    }
                    timer.cancel()
                }
                race.onFinish { work.cancel(); timer.cancel() }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    static func storeError(_ error: any Error, database: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let transaction = error as? PostgresTransactionError {
            return storeError(transaction.closureError ?? transaction.beginError ?? transaction.commitError ?? error, database: database)
        }
        if let psql = error as? PSQLError, let message = psql.serverInfo?[.message] {
            return StoreError(.databaseError, "PostgreSQL \(database): \(message)")
        }
        // No answer from the server: it is down, restarting, or unreachable.
        return StoreError(.unavailable, "PostgreSQL \(database) cannot be reached: \(describe(error))")
    }

    static func describe(_ error: any Error) -> String {
        if let psql = error as? PSQLError { return psql.serverInfo?[.message] ?? "\(psql.code)" }
        return "\(error)"
    }

    // MARK: Schema

    func migrate() async throws {
        try await read { [self] connection in
            // Processes starting together wait here; the first migrates, the others find it done.
            try await run("SELECT pg_advisory_lock(\(PostgresSchema.migrationLock))", on: connection)
            do {
                try await run(PostgresSchema.createVersions, on: connection)
                let current = try await run(PostgresSchema.currentVersion, on: connection).first?.decode(Int32.self) ?? 0
                let known = Int32(PostgresSchema.migrations.count)
                guard current <= known else {
                    throw StoreError(
                        .newerSchema,
                        "the database \(description) was migrated by a newer Herald (schema \(current); this one knows up to \(known)): upgrade Herald"
                    )
                }
                var version = current + 1
                while version <= known {
                    try await run("BEGIN", on: connection)
                    do {
                        for statement in PostgresSchema.migrations[Int(version) - 1] { try await run(statement, on: connection) }
                        try await run("INSERT INTO herald_schema (version, applied_at) VALUES ($1, $2)", [.int(Int64(version)), .int(Date().milliseconds)], on: connection)
                        try await run("COMMIT", on: connection)
                    } catch {
                        _ = try? await run("ROLLBACK", on: connection)
                        throw error
                    }
                    logger.info("store migrated", metadata: ["schema": "\(version)", "database": "\(description)"])
                    version += 1
                }
                try await run("SELECT pg_advisory_unlock(\(PostgresSchema.migrationLock))", on: connection)
            } catch {
                _ = try? await run("SELECT pg_advisory_unlock(\(PostgresSchema.migrationLock))", on: connection)
                throw error
            }
        }
    }

    func checkReady() async throws {
        try await read { [self] connection in
            let version = try await run(PostgresSchema.currentVersion, on: connection).first?.decode(Int32.self) ?? 0
            guard version == PostgresSchema.migrations.count else {
                throw StoreError(.unavailable, "the database \(description) is at schema \(version), not \(PostgresSchema.migrations.count): migrate it")
            }
        }
    }

    // MARK: Devices

    func register(_ registration: DeviceRegistration, app: String, now: Date) async throws -> (device: Device, created: Bool) {
        try await transaction { [self] connection in
            let existed = try await !run("SELECT 1 FROM devices WHERE app = $1 AND token = $2", [.text(app), .text(registration.token)], on: connection).isEmpty
            try await upsert([registration], app: app, now: now, on: connection)
            return (try await device(app: app, token: registration.token, on: connection)!, !existed)
        }
    }

    func register(batch: [DeviceRegistration], app: String, now: Date) async throws {
        try await transaction { [self] connection in try await upsert(batch, app: app, now: now, on: connection) }
    }

    private func upsert(_ registrations: [DeviceRegistration], app: String, now: Date, on connection: PostgresConnection) async throws {
        let keep = "\u{1}"
        try await run(PostgresSchema.upsertDevices, [
            .text(app),
            .texts(registrations.map(\.token)),
            .texts(registrations.map { registration in
                switch registration.user {
                case .none: keep
                case .some(.none): ""
                case .some(.some(let user)): user
                }
            }),
            .texts(registrations.map { $0.tags.map(StoreCodes.encode(tags:)) ?? keep }),
            .int32s(registrations.map { Int32($0.badge ?? -1) }),
            .int(now.milliseconds),
        ], on: connection)
        let tagged = registrations.filter { $0.tags != nil }
        guard !tagged.isEmpty else { return }
        try await run(PostgresSchema.deleteTags, [.text(app), .texts(tagged.map(\.token))], on: connection)
        let pairs = tagged.flatMap { registration in registration.tags!.map { (registration.token, $0) } }
        if !pairs.isEmpty {
            try await run(PostgresSchema.insertTags, [.text(app), .texts(pairs.map(\.0)), .texts(pairs.map(\.1))], on: connection)
        }
    }

    func device(app: String, token: String) async throws -> Device? {
        try await read { [self] connection in try await device(app: app, token: token, on: connection) }
    }

    private func device(app: String, token: String, on connection: PostgresConnection) async throws -> Device? {
        try await run("SELECT \(PostgresSchema.deviceColumns) FROM devices WHERE app = $1 AND token = $2", [.text(app), .text(token)], on: connection)
            .first.map(Self.device)
    }

    func deleteDevice(app: String, token: String) async throws -> Bool {
        try await transaction { [self] connection in
            let deleted = try await run("DELETE FROM devices WHERE app = $1 AND token = $2 RETURNING token", [.text(app), .text(token)], on: connection)
            try await run("DELETE FROM device_tags WHERE app = $1 AND token = $2", [.text(app), .text(token)], on: connection)
            return !deleted.isEmpty
        }
    }

    func devices(app: String, filter: DeviceFilter, limit: Int, after: String?) async throws -> Page<Device> {
        try await read { [self] connection in
            var sql = "SELECT d.app, d.token, d.user_id, d.tags, d.badge, d.status, d.reason, d.invalidated_at, d.created_at, d.updated_at FROM devices d"
            var values: [Bind] = [.text(app), .text(after ?? ""), .int(Int64(limit + 1))]
            if let tag = filter.tag {
                values.append(.text(tag))
                sql += " JOIN device_tags t ON t.app = d.app AND t.token = d.token AND t.tag = $\(values.count)"
            }
            sql += " WHERE d.app = $1 AND d.token > $2"
            if let status = filter.status {
                values.append(.int(Int64(StoreCodes.code(status))))
                sql += " AND d.status = $\(values.count)"
            }
            if let user = filter.user {
                values.append(.text(user))
                sql += " AND d.user_id = $\(values.count)"
            }
            sql += " ORDER BY d.token LIMIT $3"
            var devices = try await run(sql, values, on: connection).map(Self.device)
            let more = devices.count > limit
            if more { devices.removeLast() }
            return Page(items: devices, next: more ? devices.last?.token : nil)
        }
    }

    func countDevices(app: String, status: DeviceStatus?) async throws -> Int {
        try await read { [self] connection in
            let rows = if let status {
                try await run("SELECT COUNT(*) FROM devices WHERE app = $1 AND status = $2", [.text(app), .int(Int64(StoreCodes.code(status)))], on: connection)
            } else {
                try await run("SELECT COUNT(*) FROM devices WHERE app = $1", [.text(app)], on: connection)
            }
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    func invalidate(app: String, reports: [Invalidation], now: Date) async throws -> Int {
        try await transaction { [self] connection in try await invalidate(app: app, reports, on: connection) }
    }

    private func invalidate(app: String, _ reports: [Invalidation], on connection: PostgresConnection) async throws -> Int {
        let gone = reports.filter { Invalidation.status(for: $0.reason) == .unregistered }
        let bad = reports.filter { Invalidation.status(for: $0.reason) == .invalid }
        var changed = 0
        if !gone.isEmpty {
            changed += try await run(PostgresSchema.unregisterDevices + " RETURNING d.token", [
                .text(app), .texts(gone.map(\.token)), .texts(gone.map(\.reason)), .ints(gone.map { ($0.timestamp ?? Date()).milliseconds }),
            ], on: connection).count
        }
        if !bad.isEmpty {
            changed += try await run(PostgresSchema.invalidateDevices + " RETURNING d.token", [
                .text(app), .texts(bad.map(\.token)), .texts(bad.map(\.reason)),
            ], on: connection).count
        }
        return changed
    }

    static func device(_ row: PostgresRow) throws -> Device {
        let (app, token, user, tags, badge, status, reason, invalidatedAt, createdAt, updatedAt) = try row.decode(
            (String, String, String?, String?, Int32?, Int16, String?, Int64?, Int64, Int64).self
        )
        return Device(
            app: app, token: token, user: user?.isEmpty == false ? user : nil, tags: StoreCodes.decode(tags: tags), badge: Int(badge ?? 0),
            status: StoreCodes.deviceStatus(Int(status)), reason: reason, invalidatedAt: invalidatedAt.map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: createdAt), updatedAt: Date(milliseconds: updatedAt)
        )
    }

    // MARK: Notifications

    func enqueue(_ request: NotificationRequest, id: String, deadline: Date, now: Date) async throws -> (notification: StoredNotification, created: Bool) {
        let result = try await transaction { [self] connection -> (StoredNotification, Bool) in
            if let key = request.idempotencyKey,
                let existing = try await run(
                    "SELECT \(PostgresSchema.notificationColumns) FROM notifications WHERE app = $1 AND idempotency_key = $2",
                    [.text(request.app), .text(key)], on: connection
                ).first
            {
                return (try await notification(existing, on: connection), false)
            }
            let time = now.milliseconds
            var targeted = 0
            var deliveries: [(token: String, state: Int, reason: String?)] = []
            switch request.audience {
            case .tokens(let tokens):
                let unique = Array(Set(tokens)).sorted()
                var known: [String: (Int16, String?)] = [:]
                for row in try await run("SELECT token, status, reason FROM devices WHERE app = $1 AND token = ANY($2::TEXT[])", [.text(request.app), .texts(unique)], on: connection) {
                    let (token, status, reason) = try row.decode((String, Int16, String?).self)
                    known[token] = (status, reason)
                }
                deliveries = unique.map { token in
                    guard let device = known[token], device.0 != 0 else { return (token, StoreCodes.pending, nil) }
                    return (token, StoreCodes.rejected, device.1 ?? "Unregistered")
                }
            case .users(let users):
                deliveries = try await run(
                    "SELECT token FROM devices WHERE app = $1 AND status = 0 AND user_id = ANY($2::TEXT[]) ORDER BY token",
                    [.text(request.app), .texts(users)], on: connection
                ).map { (try $0.decode(String.self), StoreCodes.pending, nil) }
            case .tags(let tags):
                targeted = Int(try await run(PostgresSchema.countTagged, [.text(request.app), .texts(tags)], on: connection).first?.decode(Int64.self) ?? 0)
            case .all:
                targeted = Int(try await run("SELECT COUNT(*) FROM devices WHERE app = $1 AND status = 0", [.text(request.app)], on: connection).first?.decode(Int64.self) ?? 0)
            }
            if !request.audience.isRange { targeted = deliveries.count }
            let audience = StoreCodes.encode(request.audience)
            // Callers enqueueing with one key at once wait here for the first to commit, then
            // find nothing inserted and answer with its notification.
            let inserted = try await run("""
                INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, priority, expiration, collapse_id,
                    badge_mode, idempotency_key, status, targeted, deadline, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \(StoreCodes.queued), $12, $13, $14)
                ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id
                """, [
                .text(id), .text(request.app), .int(Int64(audience.kind)), .text(audience.values), .bytes(request.payload),
                .text(request.pushType.rawValue), .int(request.priority.map { Int64($0.rawValue) }), .int(request.expiration.map { Int64($0.unixSeconds) }),
                .text(request.collapseID), .int(Int64(StoreCodes.code(request.badge))), .text(request.idempotencyKey),
                .int(Int64(targeted)), .int(deadline.milliseconds), .int(time),
            ], on: connection)
            if inserted.isEmpty, let key = request.idempotencyKey,
                let existing = try await run(
                    "SELECT \(PostgresSchema.notificationColumns) FROM notifications WHERE app = $1 AND idempotency_key = $2",
                    [.text(request.app), .text(key)], on: connection
                ).first
            {
                return (try await notification(existing, on: connection), false)
            }
            if !deliveries.isEmpty {
                try await run(PostgresSchema.insertDeliveries, [
                    .text(id), .int(time), .texts(deliveries.map(\.token)), .smallints(deliveries.map { Int16($0.state) }),
                    .texts(deliveries.map { $0.reason ?? "" }),
                ], on: connection)
            }
            // Devices the store already knows are gone are rejected with the reason on record.
            let known = Dictionary(grouping: deliveries.filter { $0.state == StoreCodes.rejected }, by: { $0.reason ?? "" }).mapValues(\.count)
            if !known.isEmpty {
                try await run(PostgresSchema.addReasons, [.text(id), .texts(Array(known.keys)), .ints(known.values.map(Int64.init))], on: connection)
                try await run("UPDATE notifications SET rejected = rejected + $1 WHERE id = $2", [.int(Int64(known.values.reduce(0, +))), .text(id)], on: connection)
            }
            if request.audience.isRange {
                for (number, range) in StoreCodes.ranges.enumerated() {
                    try await run(
                        "INSERT INTO segments (notification_id, number, upper, cursor, state, created_at) VALUES ($1, $2, $3, $4, 0, $5)",
                        [.text(id), .int(Int64(number)), .text(range.upper), .text(range.cursor), .int(time)], on: connection
                    )
                }
            }
            try await finishIfDone(id, now: now, on: connection)
            try await run("SELECT pg_notify('\(PostgresSchema.workChannel)', '')", on: connection)
            let stored = try await run("SELECT \(PostgresSchema.notificationColumns) FROM notifications WHERE id = $1", [.text(id)], on: connection)
            return (try await notification(stored[0], on: connection), true)
        }
        if result.1 { work.signal() }
        return result
    }

    func notification(id: String) async throws -> StoredNotification? {
        try await read { [self] connection in
            guard let row = try await run("SELECT \(PostgresSchema.notificationColumns) FROM notifications WHERE id = $1", [.text(id)], on: connection).first else {
                return nil
            }
            return try await notification(row, on: connection)
        }
    }

    private func notification(_ row: PostgresRow, on connection: PostgresConnection) async throws -> StoredNotification {
        let columns = row.makeRandomAccess()
        let id = try columns["id"].decode(String.self)
        var rejected: [String: Int] = [:]
        for reason in try await run("SELECT reason, count FROM notification_reasons WHERE notification_id = $1", [.text(id)], on: connection) {
            let (name, count) = try reason.decode((String, Int64).self)
            rejected[name] = Int(count)
        }
        let payload = try columns["payload"].decode(ByteBuffer.self)
        let request = NotificationRequest(
            app: try columns["app"].decode(String.self),
            audience: StoreCodes.decode(kind: Int(try columns["audience_kind"].decode(Int16.self)), values: try columns["audience"].decode(String.self)),
            payload: Array(payload.readableBytesView),
            pushType: PushType(rawValue: try columns["push_type"].decode(String.self)) ?? .alert,
            priority: try columns["priority"].decode(Int16?.self).flatMap { PushPriority(rawValue: Int($0)) },
            expiration: try columns["expiration"].decode(Int64?.self).flatMap { try? PushExpiration(unixSeconds: Int($0)) },
            collapseID: try columns["collapse_id"].decode(String?.self),
            badge: StoreCodes.badgeMode(Int(try columns["badge_mode"].decode(Int16.self))),
            idempotencyKey: try columns["idempotency_key"].decode(String?.self)
        )
        return StoredNotification(
            id: id, request: request, status: StoreCodes.notificationStatus(Int(try columns["status"].decode(Int16.self))),
            counts: NotificationCounts(
                targeted: Int(try columns["targeted"].decode(Int64.self)), accepted: Int(try columns["accepted"].decode(Int64.self)),
                rejected: rejected, failed: Int(try columns["failed"].decode(Int64.self))
            ),
            createdAt: Date(milliseconds: try columns["created_at"].decode(Int64.self)),
            finishedAt: try columns["finished_at"].decode(Int64?.self).map(Date.init(milliseconds:))
        )
    }

    func deliveries(notificationID: String, outcome: DeliveryRecord.Outcome?, limit: Int, after: String?) async throws -> Page<DeliveryRecord> {
        try await read { [self] connection in
            var values: [Bind] = [.text(notificationID), .text(after ?? ""), .int(Int64(limit + 1))]
            var sql = "SELECT token, state, reason, apns_id, finished_at FROM deliveries WHERE notification_id = $1 AND token > $2"
            if let outcome {
                values.append(.int(Int64(StoreCodes.deliveryState(outcome))))
                sql += " AND state = $4"
            } else {
                sql += " AND state >= 2"
            }
            var records = try await run(sql + " ORDER BY token LIMIT $3", values, on: connection).compactMap { row -> DeliveryRecord? in
                let (token, state, reason, apnsID, finishedAt) = try row.decode((String, Int16, String?, String?, Int64?).self)
                guard let outcome = StoreCodes.outcome(Int(state)) else { return nil }
                return DeliveryRecord(token: token, outcome: outcome, reason: reason, apnsID: apnsID, at: Date(milliseconds: finishedAt ?? 0))
            }
            let more = records.count > limit
            if more { records.removeLast() }
            return Page(items: records, next: more ? records.last?.token : nil)
        }
    }

    func leasedWork(notificationID: String, now: Date) async throws -> Int {
        try await read { [self] connection in
            Int(try await run(PostgresSchema.leasedWork, [.text(notificationID), .int(now.milliseconds)], on: connection).first?.decode(Int64.self) ?? 0)
        }
    }

    func cancel(id: String, now: Date) async throws -> StoredNotification? {
        try await transaction { [self] connection in
            try await stop(id, reason: Unsendable.cancelled.reason, now: now, on: connection)
            guard let row = try await run("SELECT \(PostgresSchema.notificationColumns) FROM notifications WHERE id = $1", [.text(id)], on: connection).first else {
                return nil
            }
            return try await notification(row, on: connection)
        }
    }

    /// Cancels a notification still queued or sending: its unsent deliveries fail with `reason`
    /// and its unread ranges end. Its row is locked first, then its deliveries and ranges, as a
    /// completion locks them; a claim's rows are skipped (``PostgresSchema/cancelDeliveries``).
    private func stop(_ id: String, reason: String, now: Date, on connection: PostgresConnection) async throws {
        let time = now.milliseconds
        let cancelled = try await run(
            "UPDATE notifications SET status = \(StoreCodes.cancelled), finished_at = $1 WHERE id = $2 AND status < \(StoreCodes.done) RETURNING id",
            [.int(time), .text(id)], on: connection
        )
        guard !cancelled.isEmpty else { return }
        let unsent = try await run(PostgresSchema.cancelDeliveries, [.int(time), .text(id), .text(reason)], on: connection).count
        try await run("UPDATE notifications SET failed = failed + $1 WHERE id = $2", [.int(Int64(unsent)), .text(id)], on: connection)
        try await run(PostgresSchema.cancelSegments, [.text(id)], on: connection)
    }

    // MARK: Queue

    /// How many claims in a row may find only work that cannot be sent before one returns empty.
    static let claimAttempts = 8

    func claim(owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date) async throws -> [WorkBatch] {
        for _ in 0..<Self.claimAttempts {
            let (batches, unsendable) = try await claimOnce(owner: owner, limit: limit, includeRanges: includeRanges, leaseUntil: leaseUntil, now: now)
            // Failed in a transaction of its own, once the claim has committed: the notification's
            // row is locked before its deliveries there, as cancels and completions lock them.
            // If that fails, the work stays leased until its lease runs out and is found again;
            // the batches claimed are this worker's all the same.
            if !unsendable.isEmpty {
                do {
                    try await fail(unsendable, owner: owner, now: now)
                } catch {
                    logger.warning("cannot fail work that cannot be sent; it is claimed again later", metadata: ["error": "\(error)"])
                    return batches
                }
            }
            if !batches.isEmpty || unsendable.isEmpty { return batches }
        }
        return []
    }

    private func claimOnce(
        owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date
    ) async throws -> ([WorkBatch], [UnsendableWork]) {
        try await transaction(durable: false) { [self] connection in
            let lease = leaseUntil.milliseconds
            var batches: [WorkBatch] = []
            var unsendable: [UnsendableWork] = []
            // Single deliveries first: a notification to one device does not wait behind a broadcast.
            let due = try await run(PostgresSchema.claimDeliveries, [.text(owner), .int(lease), .int(now.milliseconds), .int(Int64(limit))], on: connection)
                .map { try $0.decode((Int64, String, String, Int32, Int32?).self) }
            if !due.isEmpty {
                let byNotification = Dictionary(grouping: due) { $0.1 }
                let notifications = try await queued(Array(byNotification.keys), on: connection)
                var sendable: [(QueuedNotification, [(Int64, String, String, Int32, Int32?)])] = []
                for (notificationID, rows) in byNotification {
                    switch notifications[notificationID] ?? .failure(.quarantined("notification \(notificationID) does not exist")) {
                    case .failure(let problem):
                        unsendable.append(UnsendableWork(notificationID: notificationID, notification: problem, deliveries: rows.map { ($0.0, problem.reason) }))
                    case .success(let notification):
                        let bad = rows.compactMap { row in QueuedNotification.badgeProblem(row.4.map(Int.init)).map { (row.0, $0.reason) } }
                        if !bad.isEmpty { unsendable.append(UnsendableWork(notificationID: notificationID, deliveries: bad)) }
                        let good = rows.filter { row in !bad.contains { $0.0 == row.0 } }
                        if !good.isEmpty { sendable.append((notification, good)) }
                    }
                }
                let raising = sendable.filter { $0.0.badge == .increment }.flatMap { notification, rows in
                    rows.filter { $0.4 == nil }.map { (notification.app, $0.2) }
                }
                if !raising.isEmpty {
                    try await run(PostgresSchema.lockDevices, [.texts(raising.map(\.0)), .texts(raising.map(\.1))], on: connection)
                }
                for (notification, rows) in sendable {
                    var badges: [String: Int] = [:]
                    let unraised = rows.filter { $0.4 == nil }.map(\.2)
                    if notification.badge == .increment, !unraised.isEmpty {
                        badges = try await raiseBadges(unraised, above: nil, notification: notification, on: connection)
                        try await run(
                            "UPDATE deliveries SET badge = b.badge FROM UNNEST($1::TEXT[], $2::INTEGER[]) AS b(token, badge) WHERE notification_id = $3 AND deliveries.token = b.token",
                            [.texts(unraised), .int32s(unraised.map { Int32(badges[$0] ?? 1) }), .text(notification.id)], on: connection
                        )
                    }
                    let items = rows.map { row in
                        WorkItem(
                            token: row.2, badge: notification.badge == .increment ? row.4.map(Int.init) ?? badges[row.2] ?? 1 : nil, attempt: Int(row.3)
                        )
                    }
                    batches.append(
                        WorkBatch(
                            notification: notification, items: items, isResend: items.contains { $0.attempt > 1 }, owner: owner,
                            source: .deliveries(rows.map(\.0))
                        )
                    )
                }
            }
            if includeRanges, batches.isEmpty, unsendable.isEmpty,
                let segment = try await run(PostgresSchema.claimSegment, [.text(owner), .int(lease), .int(now.milliseconds)], on: connection).first
            {
                let (notificationID, number, upper, cursor, previous, raisedThrough) = try segment.decode((String, Int32, String?, String, Int16, String?).self)
                let audienceRow = try await run("SELECT audience_kind, audience FROM notifications WHERE id = $1", [.text(notificationID)], on: connection).first
                let (kind, values) = try audienceRow?.decode((Int16, String).self) ?? (Int16(-1), "")
                var stored = try await queued([notificationID], on: connection)[notificationID] ?? .failure(.quarantined("notification \(notificationID) does not exist"))
                if case .success = stored, !StoreCodes.isAudienceKind(Int(kind)) {
                    stored = .failure(.quarantined("notification \(notificationID) has audience kind \(kind)"))
                }
                switch stored {
                case .failure(let problem):
                    unsendable.append(UnsendableWork(notificationID: notificationID, notification: problem, segment: Int(number)))
                case .success(let notification):
                    let range: [PostgresRow]
                    switch StoreCodes.decode(kind: Int(kind), values: values) {
                    case .tags(let tags):
                        range = try await run(PostgresSchema.rangeOfTags, [.text(notification.app), .text(cursor), .text(upper), .int(Int64(limit)), .texts(tags)], on: connection)
                    default:
                        range = try await run(PostgresSchema.rangeOfAll, [.text(notification.app), .text(cursor), .text(upper), .int(Int64(limit))], on: connection)
                    }
                    let (list, last) = try range.first?.decode((String, String?).self) ?? ("", nil)
                    let tokens = StoreCodes.tokens(list)
                    var badges: [String: Int] = [:]
                    if notification.badge == .increment, !tokens.isEmpty {
                        // Devices up to raised_through were raised by a claim whose lease ran out.
                        badges = try await raiseBadges(tokens, above: raisedThrough, notification: notification, on: connection)
                        if let last {
                            try await run(PostgresSchema.raisedThrough, [.text(notificationID), .int(Int64(number)), .text(last)], on: connection)
                        }
                    }
                    let items = tokens.map { WorkItem(token: $0, badge: notification.badge == .increment ? badges[$0] ?? 1 : nil, attempt: 1) }
                    batches.append(
                        WorkBatch(
                            notification: notification, items: items, isResend: Int(previous) == StoreCodes.claimed, owner: owner,
                            source: .segment(number: Int(number), after: last ?? cursor, exhausted: tokens.count < limit)
                        )
                    )
                }
            }
            let started = Array(Set(batches.map(\.notification.id)))
            if !started.isEmpty {
                try await run(
                    "UPDATE notifications SET status = \(StoreCodes.sending) WHERE status = \(StoreCodes.queued) AND id = ANY($1::TEXT[])",
                    [.texts(started)], on: connection
                )
            }
            return (batches, unsendable)
        }
    }

    /// What workers need of these notifications, by ID, or why their work cannot be sent.
    private func queued(_ ids: [String], on connection: PostgresConnection) async throws -> [String: Result<QueuedNotification, Unsendable>] {
        var result: [String: Result<QueuedNotification, Unsendable>] = [:]
        let rows = try await run("""
            SELECT id, status, app, payload, push_type, priority, expiration, collapse_id, badge_mode, deadline
            FROM notifications WHERE id = ANY($1::TEXT[])
            """, [.texts(ids)], on: connection)
        for row in rows {
            let id = try row.makeRandomAccess()[0].decode(String.self)
            do {
                let (_, status, app, payload, pushType, priority, expiration, collapseID, badge, deadline) = try row.decode(
                    (String, Int16?, String?, ByteBuffer?, String?, Int16?, Int64?, String?, Int16?, Int64?).self
                )
                result[id] = QueuedNotification.stored(
                    id: id, status: status.map(Int.init), app: app, payload: payload.map { Array($0.readableBytesView) }, pushType: pushType,
                    priority: priority.map(Int.init), expiration: expiration.map(Int.init), collapseID: collapseID, badgeMode: badge.map(Int.init),
                    deadline: deadline
                )
            } catch {
                result[id] = .failure(.quarantined("notification \(id) cannot be read: \(Self.describe(error))"))
            }
        }
        return result
    }

    /// Raises the badges of `tokens` above `raisedThrough` (all when `nil`) and returns each
    /// device's badge now.
    private func raiseBadges(
        _ tokens: [String], above raisedThrough: String?, notification: QueuedNotification, on connection: PostgresConnection
    ) async throws -> [String: Int] {
        var badges: [String: Int] = [:]
        for row in try await run(PostgresSchema.raiseBadges, [.text(notification.app), .texts(tokens), .text(raisedThrough)], on: connection) {
            let (token, badge) = try row.decode((String, Int32?).self)
            badges[token] = Int(badge ?? 0)
        }
        return badges
    }

    /// Fails claimed work that cannot be sent (``Unsendable``), a notification at a time in ID
    /// order, each locked before its rows.
    private func fail(_ unsendable: [UnsendableWork], owner: String, now: Date) async throws {
        try await transaction(durable: false) { [self] connection in
            let time = now.milliseconds
            for work in unsendable.sorted(by: { $0.notificationID < $1.notificationID }) {
                let id = work.notificationID
                let status = try await run("SELECT status FROM notifications WHERE id = $1 FOR UPDATE", [.text(id)], on: connection)
                    .first?.decode(Int16.self)
                if let problem = work.notification, let status, Int(status) < StoreCodes.done {
                    logger.warning("a notification cannot be sent; stopping it", metadata: ["notification": "\(id)", "reason": "\(problem.reason)"])
                    try await stop(id, reason: problem.reason, now: now, on: connection)
                }
                if !work.deliveries.isEmpty {
                    let failed = try await run(PostgresSchema.failClaimed, [
                        .text(owner), .int(time), .ints(work.deliveries.map(\.id)), .texts(work.deliveries.map(\.reason)),
                    ], on: connection).count
                    try await run("UPDATE notifications SET failed = failed + $1 WHERE id = $2", [.int(Int64(failed)), .text(id)], on: connection)
                }
                if let number = work.segment {
                    try await run(PostgresSchema.endClaimedSegment, [.text(id), .int(Int64(number)), .text(owner)], on: connection)
                }
                if status != nil { try await finishIfDone(id, now: now, on: connection) }
            }
        }
    }

    func renew(_ batch: WorkBatch, leaseUntil: Date) async throws {
        let (renewed, held) = try await transaction(durable: false) { [self] connection -> (Int, Int) in
            switch batch.source {
            case .deliveries(let ids):
                let renewed = try await run(
                    "UPDATE deliveries SET lease_expires_at = $1 WHERE lease_owner = $2 AND state = \(StoreCodes.claimed) AND id = ANY($3::BIGINT[]) RETURNING id",
                    [.int(leaseUntil.milliseconds), .text(batch.owner), .ints(ids)], on: connection
                )
                return (renewed.count, Set(ids).count)
            case .segment(let number, _, _):
                let renewed = try await run("""
                    UPDATE segments SET lease_expires_at = $1 WHERE notification_id = $2 AND number = $3 AND lease_owner = $4
                        AND state = \(StoreCodes.claimed) RETURNING number
                    """, [.int(leaseUntil.milliseconds), .text(batch.notification.id), .int(Int64(number)), .text(batch.owner)], on: connection
                )
                return (renewed.count, 1)
            }
        }
        if renewed < held { throw StoreError.leaseLost(batch, renewed: renewed, of: held) }
    }

    func complete(_ batch: WorkBatch, outcomes: [DeliveryOutcome], retryAt: @escaping @Sendable (Int) -> Date, now: Date) async throws {
        let retried = try await transaction(durable: false) { [self] connection -> Bool in
            let id = batch.notification.id
            let time = now.milliseconds
            // The notification's row is locked first: completions of one notification take turns,
            // so the last one sees every other range done and finishes it.
            let status = try await run("SELECT status FROM notifications WHERE id = $1 FOR UPDATE", [.text(id)], on: connection)
                .first?.decode(Int16.self) ?? Int16(StoreCodes.cancelled)
            let plan = OutcomePlan(
                outcomes: outcomes, of: batch, cancelled: Int(status) == StoreCodes.cancelled,
                retryAt: retryAt, now: now
            )
            var accepted = 0
            var rejected: [String: Int] = [:]
            var failed = 0
            switch batch.source {
            case .deliveries(let ids):
                // Only rows this worker still leases count: a lease taken over is counted by its new holder.
                let idByToken = Dictionary(zip(batch.items.map(\.token), ids), uniquingKeysWith: { first, _ in first })
                let rows = plan.rows.filter { idByToken[$0.token] != nil }
                let finished = try await run(PostgresSchema.finishDeliveries, [
                    .text(batch.owner), .int(time), .ints(rows.map { idByToken[$0.token]! }), .smallints(rows.map { Int16($0.state) }),
                    .texts(rows.map { $0.reason ?? "" }), .texts(rows.map { $0.apnsID ?? "" }), .ints(rows.map { $0.nextAttemptAt ?? -1 }),
                ], on: connection)
                for row in finished {
                    let (state, reason) = try row.decode((Int16, String?).self)
                    switch Int(state) {
                    case StoreCodes.accepted: accepted += 1
                    case StoreCodes.rejected: rejected[reason ?? "", default: 0] += 1
                    case StoreCodes.failed: failed += 1
                    default: break
                    }
                }
            case .segment(let number, let after, let exhausted):
                let advanced = try await run("""
                    UPDATE segments SET cursor = $1, state = $2, lease_owner = NULL, lease_expires_at = NULL
                    WHERE notification_id = $3 AND number = $4 AND lease_owner = $5 AND state = 1 RETURNING number
                    """, [
                    .text(after), .int(Int64(exhausted ? StoreCodes.segmentDone : StoreCodes.pending)), .text(id), .int(Int64(number)), .text(batch.owner),
                ], on: connection)
                guard !advanced.isEmpty else {
                    throw StoreError(.leaseLost, "the lease on a range of notification \(id) ran out and another worker took it")
                }
                let kept = plan.rows.filter { $0.state != StoreCodes.accepted }
                if !kept.isEmpty {
                    let badges = Dictionary(batch.items.map { ($0.token, $0.badge) }, uniquingKeysWith: { first, _ in first })
                    try await run(PostgresSchema.insertRangeDeliveries, [
                        .text(id), .int(time), .texts(kept.map(\.token)), .smallints(kept.map { Int16($0.state) }),
                        .texts(kept.map { $0.reason ?? "" }), .texts(kept.map { $0.apnsID ?? "" }), .ints(kept.map { $0.nextAttemptAt ?? -1 }),
                        .int32s(kept.map { Int32((badges[$0.token] ?? nil) ?? -1) }),
                    ], on: connection)
                }
                accepted = plan.accepted
                rejected = plan.rejected
                failed = plan.failed
            }
            try await run(
                "UPDATE notifications SET accepted = accepted + $1, rejected = rejected + $2, failed = failed + $3 WHERE id = $4",
                [.int(Int64(accepted)), .int(Int64(rejected.values.reduce(0, +))), .int(Int64(failed)), .text(id)], on: connection
            )
            if !rejected.isEmpty {
                try await run(PostgresSchema.addReasons, [.text(id), .texts(Array(rejected.keys)), .ints(rejected.values.map(Int64.init))], on: connection)
            }
            _ = try await invalidate(app: batch.notification.app, plan.invalidations, on: connection)
            try await finishIfDone(id, now: now, on: connection)
            let retry = plan.rows.contains { $0.state == StoreCodes.pending }
            if retry { try await run("SELECT pg_notify('\(PostgresSchema.workChannel)', '')", on: connection) }
            return retry
        }
        if retried { work.signal() }
    }

    private func finishIfDone(_ id: String, now: Date, on connection: PostgresConnection) async throws {
        let open = try await run(PostgresSchema.unfinishedWork, [.text(id)], on: connection).first?.decode(Int64.self) ?? 1
        guard open == 0 else { return }
        try await run(PostgresSchema.finishNotification, [.int(now.milliseconds), .text(id)], on: connection)
    }

    func release(_ batch: WorkBatch) async throws {
        try await transaction(durable: false) { [self] connection in
            switch batch.source {
            case .deliveries(let ids):
                try await run("""
                    UPDATE deliveries SET state = 0, attempts = GREATEST(attempts - 1, 0), lease_owner = NULL
                    WHERE id = ANY($1::BIGINT[]) AND lease_owner = $2 AND state = 1
                    """, [.ints(ids), .text(batch.owner)], on: connection)
            case .segment(let number, _, _):
                try await run(
                    "UPDATE segments SET state = 0, lease_owner = NULL, lease_expires_at = NULL WHERE notification_id = $1 AND number = $2 AND lease_owner = $3 AND state = 1",
                    [.text(batch.notification.id), .int(Int64(number)), .text(batch.owner)], on: connection
                )
            }
            try await run("SELECT pg_notify('\(PostgresSchema.workChannel)', '')", on: connection)
        }
        work.signal()
    }

    func statistics(now: Date) async throws -> QueueStatistics {
        try await read { [self] connection in
            let row = try await run("""
                SELECT (SELECT COUNT(*) FROM deliveries WHERE state < 2), (SELECT COUNT(*) FROM segments WHERE state < 2),
                    (SELECT COUNT(*) FROM notifications WHERE status < 2)
                """, on: connection).first
            guard let row else { return QueueStatistics(pendingDeliveries: 0, pendingRanges: 0, activeNotifications: 0) }
            let (deliveries, segments, notifications) = try row.decode((Int64, Int64, Int64).self)
            return QueueStatistics(pendingDeliveries: Int(deliveries), pendingRanges: Int(segments), activeNotifications: Int(notifications))
        }
    }

    func purge(finishedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await transaction { [self] connection in
            let time = cutoff.milliseconds
            var purged = try await run(PostgresSchema.purgeDeliveries + " RETURNING id", [.int(time), .int(Int64(limit))], on: connection).count
            if purged < limit {
                let ids = try await run(PostgresSchema.purgeNotifications, [.int(time), .int(Int64(limit - purged))], on: connection)
                    .map { try $0.decode(String.self) }
                if !ids.isEmpty {
                    for table in ["notification_reasons", "segments"] {
                        try await run("DELETE FROM \(table) WHERE notification_id = ANY($1::TEXT[])", [.texts(ids)], on: connection)
                    }
                    try await run("DELETE FROM notifications WHERE id = ANY($1::TEXT[])", [.texts(ids)], on: connection)
                    purged += ids.count
                }
            }
            return purged
        }
    }

    func waitForWork(timeout: Duration) async {
        await work.wait(timeout: timeout)
    }
}

/// The first of an operation's result, its deadline and its caller's cancellation resumes the
/// caller; the others find it done. Whatever finishes first also cancels the rest.
final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        var outcome: Swift.Result<Result, any Error>?
        var cleanup: (@Sendable () -> Void)?
        var finished = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Result, any Error>) {
        let early = state.withLock { state -> Swift.Result<Result, any Error>? in
            if state.finished { return state.outcome }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// `cleanup` runs once the race is decided (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let decided = state.withLock { state -> Bool in
            if state.finished { return true }
            state.cleanup = cleanup
            return false
        }
        if decided { cleanup() }
    }

    func finish(_ outcome: Swift.Result<Result, any Error>) {
        let (continuation, cleanup) = state.withLock { state -> (CheckedContinuation<Result, any Error>?, (@Sendable () -> Void)?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            defer { state.continuation = nil; state.cleanup = nil }
            if state.continuation == nil { state.outcome = outcome }
            return (state.continuation, state.cleanup)
        }
        continuation?.resume(with: outcome)
        cleanup?()
    }
}

/// Set once an operation holds a connection.
final class LeaseFlag: Sendable {
    private let state = Mutex(false)

    func set() { state.withLock { $0 = true } }
    var isSet: Bool { state.withLock { $0 } }
}
