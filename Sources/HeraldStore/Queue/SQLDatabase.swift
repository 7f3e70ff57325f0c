/// A connection the queue engine runs statements on.
protocol SQLConnection: Sendable {
    /// Runs `sql` (parameters `$1`, `$2`…) with `binds`, and returns its rows.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLConnection {
    @discardableResult
    func query(_ sql: String) async throws -> [SQLRow] { try await query(sql, []) }
}

/// How a write runs.
enum WriteKind: Sendable {
    /// One transaction, committed durably: what a caller is told is stored.
    case durable
    /// One transaction whose commit need not wait for the disk: the queue's own bookkeeping
    /// (claims, completions, leases). A database crash may lose its last fraction of a second,
    /// which only means a lease runs out and a batch is claimed, and sent, again: at least once.
    case bookkeeping
    /// Each statement on its own (SQLite: no statement journal for a bulk statement), the
    /// statements still run alone, in order. A batch cut short is finished by running it again.
    case statements
}

/// What a database gives the queue engine: its dialect, connections and transactions, its
/// schema, and how workers are woken. Everything else (the queue's logic and its SQL) is the
/// engine's, written once.
protocol SQLDatabase: Sendable {
    var dialect: any SQLDialect { get }
    /// Wakes this process's idle workers.
    var work: WorkSignal { get }

    /// Keeps the connections (and the wake-up listener) going until cancelled; returns at once if there is nothing to run.
    func run() async
    func close() async throws
    /// Applies the migrations this Herald knows and the database does not have yet; refuses a
    /// database migrated by a newer Herald.
    func migrate() async throws
    /// Whether the database answers and is migrated.
    func checkReady() async throws
    /// The schema, clock and writability, read only.
    func inspect() async throws -> StoreInspection

    func write<Result: Sendable>(_ kind: WriteKind, _ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result
    func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result
    /// Tells other processes' workers, once the transaction commits, that there is work.
    func announceWork(on connection: any SQLConnection) async throws
    /// Readies the devices table for broadcasts after a bulk registration: PostgreSQL marks its
    /// new pages all-visible (`VACUUM`), so a broadcast reads its ranges from the index alone
    /// rather than a table page per device until autovacuum comes round. Nothing on SQLite,
    /// whose devices are kept in key order. Errors are logged, not thrown: it only speeds reading.
    func settleDevices() async
}
