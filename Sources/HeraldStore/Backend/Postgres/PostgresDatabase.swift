import HeraldCore
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The scale-out database: postgres-nio's connection pool, `FOR UPDATE SKIP LOCKED` claims so
/// many processes share one queue, LISTEN/NOTIFY to wake idle workers at once.
final class PostgresDatabase: SQLDatabase {
    let dialect: any SQLDialect = PostgresDialect()
    let work = WorkSignal()
    /// The pool, made anew after a long outage (``PostgresPools``).
    private let pools: PostgresPools
    /// Whether the database answers: operations are refused at once while it does not.
    private let monitor: PostgresMonitor
    /// The pool's settings for one connection of its own, made before the pool's first (``probe()``).
    private let single: Result<PostgresConnection.Configuration, any Error>
    private let description: String
    private let logger: Logger

    init(configuration: StoreURL.Postgres, maximumConnections: Int, logger: Logger) {
        // libpq's meanings: `prefer` and `require` encrypt without checking the certificate,
        // `verify-full` checks it (against `sslrootcert`, else the system's CAs) and the host name.
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        var verified = TLSConfiguration.makeClientConfiguration()
        verified.certificateVerification = .fullVerification
        if let file = configuration.rootCertificateFile { verified.trustRoots = .file(file) }
        let tls: PostgresClient.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(unverified)
        case .require: tls = .require(unverified)
        case .verifyFull: tls = .require(verified)
        }
        var client = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.user, password: configuration.password,
            database: configuration.database, tls: tls
        )
        client.options.maximumConnections = max(2, maximumConnections)
        client.options.connectTimeout = .seconds(5)
        self.pools = PostgresPools { [client] in PostgresClient(configuration: client, backgroundLogger: logger) }
        let single = Result {
            let context: (TLSConfiguration) throws -> NIOSSLContext = { try NIOSSLContext(configuration: $0) }
            let singleTLS: PostgresConnection.Configuration.TLS =
                switch configuration.tls {
                case .disable: .disable
                case .prefer: .prefer(try context(unverified))
                case .require: .require(try context(unverified))
                case .verifyFull: .require(try context(verified))
                }
            var single = PostgresConnection.Configuration(
                host: configuration.host, port: configuration.port, username: configuration.user, password: configuration.password,
                database: configuration.database, tls: singleTLS
            )
            single.options.connectTimeout = .seconds(5)
            return single
        }
        self.single = single
        self.description = StoreURL.postgres(configuration).description
        self.monitor = PostgresMonitor(configuration: single, database: description, logger: logger)
        self.logger = logger
    }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.pools.run() }
            group.addTask { await self.monitor.run(replacePool: { self.pools.replace() }) }
            group.addTask { await self.listenForWork() }
        }
    }

    func close() async throws {}

    /// Wakes this process's workers when any process queues work, on a connection of its own;
    /// reconnects after a second when the database goes away.
    private func listenForWork() async {
        while !Task.isCancelled {
            do {
                try await pools.current.withConnection { connection in
                    try await connection.listen(on: PostgresSchema.workChannel) { notifications in
                        // Listening from here: work queued before (at start, or while the
                        // connection was down) announced itself to no one, so look once now
                        // rather than at the next idle poll.
                        self.work.signal()
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

    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = [], on connection: PostgresConnection) async throws -> [SQLRow] {
        try await PostgresSQLConnection(connection: connection, logger: logger).query(sql, values)
    }

    /// Runs `body` in a transaction, with the database's errors as ``StoreError``. Bookkeeping
    /// commits without waiting for the WAL to reach the disk (`synchronous_commit = off`); every
    /// other kind is durable (``WriteKind``).
    func write<Result: Sendable>(_ kind: WriteKind, _ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result {
        do {
            return try await withDeadlines { leased in
                try await self.pools.current.withTransaction(logger: self.logger) { connection in
                    leased.set()
                    if kind == .bookkeeping { try await self.run("SET LOCAL synchronous_commit = off", on: connection) }
                    return try await body(PostgresSQLConnection(connection: connection, logger: self.logger))
                }
            }
        } catch {
            throw failure(error)
        }
    }

    func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result {
        try await withConnection { [logger] connection in try await body(PostgresSQLConnection(connection: connection, logger: logger)) }
    }

    func announceWork(on connection: any SQLConnection) async throws {
        try await connection.query("SELECT pg_notify('\(PostgresSchema.workChannel)', '')")
    }

    /// `VACUUM` outside any transaction (it cannot run in one). `SKIP_LOCKED`: an import that
    /// finds another process's vacuum of the table under way leaves the table to it.
    ///
    /// VACUUM marks a page all-visible only once its rows' commits are on disk. Where commits do
    /// not wait for that (the server's `synchronous_commit = off`), the WAL writer flushes them
    /// within a few `wal_writer_delay`s: this waits for it, at most ``settleWait``.
    ///
    /// The one statement not bounded by a batch: it reads the pages the registration wrote
    /// (22-55 ms after 300,000 new devices here). Past ``operationDeadline`` the caller goes
    /// on, and the server finishes the vacuum on its connection.
    func settleDevices() async {
        do {
            _ = try await withConnection { [self] connection in
                let target = try await run("SELECT pg_current_wal_insert_lsn()::TEXT", on: connection).first?.text(0) ?? "0/0"
                let clock = ContinuousClock()
                let deadline = clock.now + Self.settleWait
                while clock.now < deadline {
                    let flushed = try await run("SELECT (pg_current_wal_flush_lsn() >= $1::TEXT::PG_LSN)::INTEGER", [.text(target)], on: connection).first?.int(0)
                    if flushed == 1 { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return try await run("VACUUM (SKIP_LOCKED) devices", on: connection)
            }
        } catch {
            logger.notice("cannot vacuum the devices table after a bulk registration; autovacuum will", metadata: ["error": "\(error)"])
        }
    }
    static let settleWait: Duration = .seconds(2)

    /// Runs `body` on a connection of the pool, with the database's errors as ``StoreError``.
    private func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        do {
            return try await withDeadlines { leased in
                try await self.pools.current.withConnection { connection in
                    leased.set()
                    return try await body(connection)
                }
            }
        } catch {
            throw failure(error)
        }
    }

    /// `error` as a ``StoreError``; one that says the database is gone makes the monitor ask it.
    private func failure(_ error: any Error) -> StoreError {
        let failure = Self.storeError(error, database: description)
        if failure.code == .unavailable { monitor.suspect() }
        return failure
    }

    /// How long an operation waits for a connection from a pool that is busy while the database
    /// answers. While it does not, operations are refused at once (``PostgresMonitor``).
    static let connectionDeadline: Duration = .seconds(5)

    /// How long an operation may take once it holds a connection. A query sent on a connection
    /// the server is closing at that moment (PostgreSQL restarting) can go unanswered for ever:
    /// seen with postgres-nio 1.33 when the server was killed with SIGQUIT mid-transaction.
    /// Every statement Herald runs is bounded (batches of at most a few thousand rows), so a
    /// statement unanswered for 20 s means the connection is gone (the caller retries or hears 503).
    static let operationDeadline: Duration = .seconds(20)

    /// Runs `operation`, which calls `leased.set()` once it holds a connection, and fails with
    /// `unavailable` at once while the database does not answer (``PostgresMonitor``), as soon
    /// as it stops answering, when it has no connection within ``connectionDeadline``, or no
    /// result within ``operationDeadline``. The operation is then cancelled and left behind, not
    /// awaited: a query that will never be answered must not hold its caller (a worker, an API
    /// request). One not done within ``PostgresReachability/suspectAfter`` has the monitor ask
    /// the database whether it still answers.
    private func withDeadlines<Result: Sendable>(
        _ operation: @escaping @Sendable (LeaseFlag) async throws -> Result
    ) async throws -> Result {
        try monitor.admit()
        let leased = LeaseFlag()
        let race = DeadlineRace<Result>()
        let description = self.description
        let monitor = self.monitor
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                let watched = monitor.started { error in race.finish(.failure(error)) }
                let timer = Task {
                    try await Task.sleep(for: PostgresReachability.suspectAfter)
                    monitor.suspect()
                    try await Task.sleep(for: Self.connectionDeadline - PostgresReachability.suspectAfter)
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
                race.onFinish {
                    work.cancel()
                    timer.cancel()
                    monitor.finished(watched)
                }
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
            switch code(ofSQLState: psql.serverInfo?[.sqlState] ?? "") {
            case .storageFull:
                return StoreError(.storageFull, "PostgreSQL \(database): the disk is full (\(message)); nothing of this write was stored: free space on the database server's disk")
            case .unavailable:
                return StoreError(.unavailable, "PostgreSQL \(database) cannot serve now: \(message)")
            case let code:
                return StoreError(code, "PostgreSQL \(database): \(message)")
            }
        }
        // No answer from the server: it is down, restarting, or unreachable.
        return StoreError(.unavailable, "PostgreSQL \(database) cannot be reached: \(describe(error))")
    }

    /// What an error the server answered with means for the caller, by its SQLSTATE
    /// (https://www.postgresql.org/docs/current/errcodes-appendix.html):
    /// - 53100 `disk_full`: ``StoreError/Code/storageFull``; waiting will not free the disk.
    /// - 53000 `insufficient_resources`, 53200 `out_of_memory`, 53300 `too_many_connections`,
    ///   class 08 (connection exceptions) and 57P01-57P03 (the server shutting down, crashed,
    ///   starting): ``StoreError/Code/unavailable``; the server recovers from these by itself.
    /// - Anything else (53400 `configuration_limit_exceeded` among them, which a setting mends):
    ///   ``StoreError/Code/databaseError``.
    static func code(ofSQLState state: String) -> StoreError.Code {
        switch state {
        case "53100": .storageFull
        case "53000", "53200", "53300", "57P01", "57P02", "57P03": .unavailable
        case let state where state.hasPrefix("08"): .unavailable
        default: .databaseError
        }
    }

    static func describe(_ error: any Error) -> String {
        if let psql = error as? PSQLError { return psql.serverInfo?[.message] ?? "\(psql.code)\(psql.underlying.map { ": \($0)" } ?? "")" }
        return "\(error)"
    }

    // MARK: Schema

    /// One connection of its own, opened and closed, so that what the pool would only log is
    /// said: a wrong password or user, or a database that does not exist, is refused for good
    /// (``StoreError/Code/refused``, which start-up does not wait out); anything else (refused,
    /// timed out, a name not resolved yet) is ``StoreError/Code/unavailable`` with its reason.
    func probe() async throws {
        let configuration: PostgresConnection.Configuration
        do {
            configuration = try single.get()
        } catch {
            throw StoreError(.invalidURL, "PostgreSQL \(description): the TLS settings cannot be used: \(error)")
        }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: logger).get()
        } catch let error as PSQLError {
            // SQLSTATE classes 28 (invalid authorization) and 3D000 (invalid catalog name):
            // https://www.postgresql.org/docs/current/errcodes-appendix.html
            if let state = error.serverInfo?[.sqlState], state.hasPrefix("28") || state == "3D000" {
                let message = error.serverInfo?[.message] ?? state
                throw StoreError(.refused, "PostgreSQL \(description) refused this gateway: \(message); correct the user, the password (PGPASSWORD) or the database name")
            }
            throw StoreError(.unavailable, "PostgreSQL \(description) cannot be reached: \(Self.describe(error))")
        } catch {
            throw StoreError(.unavailable, "PostgreSQL \(description) cannot be reached: \(error)")
        }
        try? await connection.close()
    }

    func migrate() async throws {
        try await probe()
        try await withConnection { [self] connection in
            // Processes starting together wait here; the first migrates, the others find it done.
            try await run("SELECT pg_advisory_lock(\(PostgresSchema.migrationLock))", on: connection)
            do {
                try await run(PostgresSchema.createVersions, on: connection)
                let current = try await run(PostgresSchema.currentVersion, on: connection).first?.int(0) ?? 0
                let known = Int64(PostgresSchema.migrations.count)
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
                        try await run("INSERT INTO herald_schema (version, applied_at) VALUES ($1, $2)", [.int(version), .int(Date().milliseconds)], on: connection)
                        try await run("COMMIT", on: connection)
                    } catch {
                        _ = try? await run("ROLLBACK", on: connection)
                        throw error
                    }
                    logger.debug("store migration applied", metadata: ["schema": "\(version)", "database": "\(description)"])
                    version += 1
                }
                // One line for the whole upgrade, not one per step (a fresh database takes every step).
                if current < known { logger.info("store migrated", metadata: ["from": "\(current)", "schema": "\(known)", "database": "\(description)"]) }
                try await run("SELECT pg_advisory_unlock(\(PostgresSchema.migrationLock))", on: connection)
            } catch {
                _ = try? await run("SELECT pg_advisory_unlock(\(PostgresSchema.migrationLock))", on: connection)
                throw error
            }
        }
    }

    func inspect() async throws -> StoreInspection {
        try await probe()
        return try await read { connection in
            let facts = try await connection.query(
                """
                SELECT (to_regclass('herald_schema') IS NOT NULL)::INTEGER,
                    (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT,
                    (pg_is_in_recovery() OR current_setting('default_transaction_read_only') = 'on')::INTEGER,
                    current_setting('server_version')
                """
            ).first
            let hasSchema = (facts?.int(0) ?? 0) > 0
            let version = hasSchema ? Int(try await connection.query(PostgresSchema.currentVersion).first?.int(0) ?? 0) : 0
            return StoreInspection(
                schema: version, known: PostgresSchema.migrations.count, databaseTime: Date(milliseconds: facts?.int(1) ?? 0),
                isReadOnly: (facts?.int(2) ?? 0) != 0, serverVersion: facts?.text(3))
        }
    }

    /// Asked on the monitor's own connection, not the pool's, within a second: a readiness
    /// probe hears 503 in time while the database does not answer, and a busy pool does not make
    /// the process look unready.
    func checkReady() async throws {
        let version = try await monitor.check() ?? 0
        guard version == PostgresSchema.migrations.count else {
            throw StoreError(.unavailable, "the database \(description) is at schema \(version), not \(PostgresSchema.migrations.count): migrate it")
        }
    }
}

/// A PostgreSQL connection as the engine runs statements on it.
struct PostgresSQLConnection: SQLConnection {
    let connection: PostgresConnection
    let logger: Logger

    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .null: bindings.appendNull()
            case .int(let int): bindings.append(int)
            case .real(let real): bindings.append(real)
            case .text(let text): bindings.append(text)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            }
        }
        let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger).collect()
        return try rows.map { row in
            var values: [SQLValue] = []
            values.reserveCapacity(row.count)
            for cell in row {
                guard cell.bytes != nil else {
                    values.append(.null)
                    continue
                }
                switch cell.dataType {
                case .int2, .int4, .int8: values.append(.int(try cell.decode(Int64.self)))
                case .float4, .float8, .numeric: values.append(.real(try cell.decode(Double.self)))
                case .bytea: values.append(.blob(Array(try cell.decode(ByteBuffer.self).readableBytesView)))
                case .bool: values.append(.int(try cell.decode(Bool.self) ? 1 : 0))
                default: values.append(.text(try cell.decode(String.self)))
                }
            }
            return SQLRow(values: values)
        }
    }
}

/// How PostgreSQL spells the queue's statements: rows locked `FOR UPDATE SKIP LOCKED` so many
/// processes claim at once, JSON arrays read with `json_array_elements`.
struct PostgresDialect: SQLDialect {
    func parameter(_ index: Int, _ type: SQLType) -> String { "$\(index)::\(type.rawValue)" }
    func list(_ index: Int, _ type: SQLType) -> String {
        "SELECT e.value::\(type.rawValue) FROM json_array_elements_text($\(index)::json) AS e(value)"
    }
    func rows(_ index: Int) -> String { "json_array_elements($\(index)::json)" }
    func element(_ row: String, _ index: Int, _ type: SQLType) -> String { "(\(row).value ->> \(index))::\(type.rawValue)" }
    func skipLocked(of table: String?) -> String { table.map { " FOR UPDATE OF \($0) SKIP LOCKED" } ?? " FOR UPDATE SKIP LOCKED" }
    var forUpdate: String { " FOR UPDATE" }
    func greatest(_ a: String, _ b: String) -> String { "GREATEST(\(a), \(b))" }
    func least(_ a: String, _ b: String) -> String { "LEAST(\(a), \(b))" }
    func joinLines(_ expression: String, orderBy order: String?) -> String {
        "string_agg(\(expression), E'\\n'\(order.map { " ORDER BY \($0)" } ?? ""))"
    }
    /// Devices are a heap with the primary key `(app, token)`; the broadcast's key index is apart.
    var devicesInKeyOrder: Bool { false }
    var deviceKey: String { "(app, token)" }
    func devices(_ alias: String, in index: Int, hashAt: Int) -> String {
        "\(alias).token IN (SELECT \(element("l", 0, .text)) FROM \(rows(index)) AS l)"
    }
    func spell(_ sql: String) -> String { sql }
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
