import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing


/// A fresh, migrated store on `backend` for the length of `body`: a file of its own for SQLite,
/// a database of its own in the test process's cluster for PostgreSQL.
func withStore(
    _ backend: Backend, _ configure: (inout HeraldStore.Configuration) -> Void = { _ in }, _ body: (HeraldStore) async throws -> Void
) async throws {
    let scratch = try ScratchDirectory()
    var configuration = try HeraldStore.Configuration(url: try await backend.storeURL(scratch: scratch))
    configuration.initialRetryDelay = .seconds(5)
    configure(&configuration)
    try await withHeraldStore(configuration: configuration) { store in try await body(store) }
}


let app = "shop"

/// A distinct 32-byte token for each number.
func token(_ number: Int) -> String {
    String(format: "%064x", number)
}

func registration(_ number: Int, user: String?? = nil, tags: Set<String>? = nil, badge: Int? = nil) throws -> DeviceRegistration {
    try DeviceRegistration(token: token(number), user: user, tags: tags, badge: badge)
}

let payload = Array(#"{"aps":{"alert":"Hello"}}"#.utf8)

/// Registers devices 0..<count as `registration` makes them, in one streamed call.
func registerAll(
    _ store: HeraldStore, _ count: Int, app: String = app, _ registration: @escaping @Sendable (Int) throws -> DeviceRegistration
) async throws {
    let stream = AsyncThrowingStream<DeviceRegistration, any Error> { continuation in
        do {
            for number in 0..<count { continuation.yield(try registration(number)) }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
    try await store.register(contentsOf: stream, app: app)
}

/// Claims everything due at `now`, in batches of `limit`, for `owner`.
func claimAll(_ store: HeraldStore, owner: String = "worker-1", limit: Int = 1000, now: Date = Date()) async throws -> [WorkBatch] {
    var all: [WorkBatch] = []
    for _ in 0..<10_000 {
        let batches = try await store.claim(owner: owner, limit: limit, now: now)
        if batches.isEmpty { return all }
        all += batches
    }
    Issue.record("claims did not run out")
    return all
}

/// Completes `batch` with every device accepted.
func acceptAll(_ store: HeraldStore, _ batch: WorkBatch, now: Date = Date()) async throws {
    try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .accepted(receipt: UUID().uuidString.lowercased())) }, now: now)
}

/// Claims and accepts everything due, batch by batch; returns the tokens sent, in order.
@discardableResult
func deliverAll(_ store: HeraldStore, limit: Int = 1000, now: Date = Date()) async throws -> [String] {
    var sent: [String] = []
    for _ in 0..<10_000 {
        let batches = try await store.claim(owner: "worker-1", limit: limit, now: now)
        if batches.isEmpty { return sent }
        for batch in batches {
            sent += batch.items.map(\.token)
            try await acceptAll(store, batch, now: now)
        }
    }
    Issue.record("deliveries did not run out")
    return sent
}

/// The database under a test's store, for writing rows the store's API never writes (a database
/// edited by hand, or damaged): SQL as both SQLite and PostgreSQL read it.
struct RawDatabase: Sendable {
    let backend: Backend
    let url: String

    func execute(_ sql: String) async throws {
        switch backend {
        case .sqlite:
            let script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); c.executescript(sys.argv[2]); c.commit()"
            try await runCommand("python3", ["-c", script, String(url.dropFirst("sqlite:".count)), sql])
        case .postgres:
            try await PostgresCluster.shared().psql(sql, database: url)
        }
    }
}

/// A fresh, migrated store as ``withStore(_:_:_:)`` gives, with its database.
func withStore(
    _ backend: Backend, _ configure: (inout HeraldStore.Configuration) -> Void = { _ in }, _ body: (HeraldStore, RawDatabase) async throws -> Void
) async throws {
    let scratch = try ScratchDirectory()
    let url = try await backend.storeURL(scratch: scratch)
    var configuration = try HeraldStore.Configuration(url: url)
    configuration.initialRetryDelay = .seconds(5)
    configure(&configuration)
    try await withHeraldStore(configuration: configuration) { store in try await body(store, RawDatabase(backend: backend, url: url)) }
}
