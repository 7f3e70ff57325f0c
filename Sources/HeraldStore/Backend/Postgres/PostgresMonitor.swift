import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Keeps ``PostgresReachability`` up to date and does what it decides. It asks the database,
/// on a connection of its own, when an operation is slow or fails, when a readiness check
/// wants to know, and every ``PostgresReachability/probeInterval`` while the database does not
/// answer. When the database stops answering it fails the operations under way and refuses
/// new ones at once with `unavailable` (the API's 503); when it answers again, operations go
/// to the pool again, a new one after a long outage.
final class PostgresMonitor: Sendable {
    private let reachability = Mutex(PostgresReachability())
    private let wake = WorkSignal()
    private let link: PostgresProbeLink
    /// Operations under way, each with how to fail it.
    private let operations = Mutex(Registry<@Sendable (StoreError) -> Void>())
    /// Readiness checks waiting for a probe's answer, each with the number of the last probe
    /// started before it (whose answer, unless unanswered, is too old for it).
    private let waiters = Mutex(Registry<(after: UInt64, resume: @Sendable (PostgresReachability.Answer) -> Void)>())
    private let database: String
    private let logger: Logger

    /// `configuration`: the monitor's own connection's settings; `database`: the URL without its password.
    init(configuration: Result<PostgresConnection.Configuration, any Error>, database: String, logger: Logger) {
        link = PostgresProbeLink(configuration: configuration, logger: logger)
        self.database = database
        self.logger = logger
    }

    /// Asks the database whenever ``PostgresReachability`` says so, until cancelled.
    /// `replacePool` makes the operations' pool anew (``PostgresReachability/Action/replacePool``).
    func run(replacePool: @Sendable () async -> Void) async {
        defer { link.drop() }
        while !Task.isCancelled {
            let number: UInt64
            switch reachability.withLock({ $0.next(at: .now) }) {
            case .wait(let duration):
                // A wake-up sent before this wait began is not lost for long: the wait is short.
                await wake.wait(timeout: duration)
                continue
            case .probe(let started):
                number = started
            }
            let answer = await probe()
            let action = reachability.withLock { $0.probeEnded(answer, at: .now) }
            switch action {
            case .none:
                break
            case .failOperations(let reason):
                logger.warning(
                    "PostgreSQL does not answer; operations fail at once (503) until it does", metadata: ["database": "\(database)", "reason": "\(reason)"])
                let error = unavailable(reason, for: .zero)
                for fail in operations.withLock({ $0.all }) { fail(error) }
            case .replacePool:
                await replacePool()
                reachability.withLock { $0.poolReplaced() }
                logger.notice("PostgreSQL answers again; operations resume on a new pool", metadata: ["database": "\(database)"])
            case .resumed:
                logger.notice("PostgreSQL answers again; operations resume", metadata: ["database": "\(database)"])
            }
            let answered = waiters.withLock { waiters in
                waiters.remove { waiter in
                    if case .unanswered = answer { return true }
                    return waiter.after < number
                }
            }
            for waiter in answered { waiter.resume(answer) }
        }
    }

    /// Throws `unavailable` at once while the database does not answer.
    func admit() throws(StoreError) {
        if let refusal = reachability.withLock({ $0.refusal(at: .now) }) { throw unavailable(refusal.reason, for: refusal.for) }
    }

    /// Something suggests the database is gone (an operation slow, or failed without an answer):
    /// ask it now, or as soon as ``PostgresReachability/probeInterval`` allows.
    func suspect() {
        reachability.withLock { $0.want() }
        wake.signal()
    }

    /// Registers an operation under way, which `fail` ends with `unavailable` should the
    /// database stop answering; ``finished(_:)`` with the ID returned when it ends.
    func started(_ fail: @escaping @Sendable (StoreError) -> Void) -> UInt64 {
        let id = operations.withLock { $0.add(fail) }
        // It became unreachable between the admission and now.
        if let refusal = reachability.withLock({ $0.refusal(at: .now) }) { fail(unavailable(refusal.reason, for: refusal.for)) }
        return id
    }

    func finished(_ id: UInt64) {
        _ = operations.withLock { $0.remove(id) }
    }

    /// The schema version the database answers with, asked from now on, within about a second;
    /// `nil` when it answered with an error. Throws `unavailable` when it does not answer, at
    /// once while it is known not to.
    func check() async throws -> Int64? {
        let answer: PostgresReachability.Answer
        switch reachability.withLock({ $0.readiness() }) {
        case .refused(let reason):
            answer = .unanswered(reason)
        case .ask(let after):
            let race = DeadlineRace<PostgresReachability.Answer>()
            let id = waiters.withLock { $0.add((after, { answer in race.finish(.success(answer)) })) }
            // Wanted again now that it waits: a probe that started and ended in between did not
            // answer it, and another follows.
            suspect()
            // A probe under way ends within its deadline (unanswered, it answers this check
            // too), and the next asks soon after; past both, the database is too slow to call ready.
            let limit = PostgresReachability.probeDeadline + PostgresReachability.probeInterval + PostgresReachability.probeDeadline
            answer = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    race.start(continuation)
                    let timer = Task {
                        try await Task.sleep(for: limit)
                        race.finish(.success(.unanswered("no answer within \(limit)")))
                    }
                    race.onFinish { [self] in
                        timer.cancel()
                        _ = waiters.withLock { $0.remove(id) }
                    }
                }
            } onCancel: {
                race.finish(.failure(CancellationError()))
            }
        }
        switch answer {
        case .answered(let schema): return schema
        case .unanswered(let reason): throw unavailable(reason, for: .zero)
        }
    }

    /// One question to the database on the monitor's connection (opened first when there is
    /// none), within ``PostgresReachability/probeDeadline`` once it is open; a connection that
    /// failed it is dropped.
    private func probe() async -> PostgresReachability.Answer {
        do {
            // The connection's own timeouts bound each step; this bounds them together, whatever happens.
            let limit = PostgresReachability.connectDeadline + PostgresReachability.probeDeadline
            let schema = try await Self.bounded(by: limit) { [link] in
                try await link.ask(onClose: { [weak self] in self?.suspect() })
            }
            return .answered(schema: schema)
        } catch {
            link.drop()
            logger.debug("PostgreSQL did not answer the monitor", metadata: ["database": "\(database)", "error": "\(error)"])
            return .unanswered(PostgresDatabase.describe(error))
        }
    }

    private func unavailable(_ reason: String, for duration: Duration) -> StoreError {
        let since = duration < .seconds(1) ? "" : " for \(duration.components.seconds) s"
        return StoreError(.unavailable, "PostgreSQL \(database) does not answer\(since) (\(reason)); operations are refused at once until it does")
    }

    /// The result of `operation`, or ``NoAnswer`` after `limit`. The operation is then cancelled
    /// and left behind, not awaited: a query that will never be answered must not hold its caller.
    static func bounded<Result: Sendable>(by limit: Duration, _ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let race = DeadlineRace<Result>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                let timer = Task {
                    try await Task.sleep(for: limit)
                    race.finish(.failure(NoAnswer(limit: limit)))
                }
                let work = Task {
                    do {
                        race.finish(.success(try await operation()))
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                race.onFinish {
                    work.cancel()
                    timer.cancel()
                }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// A probe that had no answer within its limit.
    struct NoAnswer: Error, CustomStringConvertible {
        let limit: Duration
        var description: String { "no answer within \(limit)" }
    }
}

/// Things registered under an ID, taken out by it.
private struct Registry<Item> {
    private var next: UInt64 = 0
    private var items: [UInt64: Item] = [:]

    mutating func add(_ item: Item) -> UInt64 {
        defer { next += 1 }
        items[next] = item
        return next
    }

    mutating func remove(_ id: UInt64) -> Item? {
        items.removeValue(forKey: id)
    }

    var all: [Item] { Array(items.values) }

    /// Takes out the items `taken` says, and returns them.
    mutating func remove(where taken: (Item) -> Bool) -> [Item] {
        var removed: [Item] = []
        for (id, item) in items where taken(item) {
            items[id] = nil
            removed.append(item)
        }
        return removed
    }
}
