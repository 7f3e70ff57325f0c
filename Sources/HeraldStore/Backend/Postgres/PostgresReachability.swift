/// Whether PostgreSQL answers, as this process last found out, and what follows from it: whether
/// an operation may go to the pool at all, when to ask the database again, and whether the pool
/// must be made anew before operations go back to it. A plain value that decides;
/// ``PostgresMonitor`` asks the database (a probe on a connection of its own) and does what it says.
///
/// postgres-nio's pool queues a lease while its connection attempts fail, and fails it only once
/// its circuit breaker trips (after a minute): without this, every operation during an outage
/// waited ``PostgresDatabase/connectionDeadline`` for a connection, and a readiness probe with a
/// 1 s timeout saw a timeout, never a 503.
struct PostgresReachability: Sendable {
    typealias Instant = ContinuousClock.Instant

    enum State: Sendable, Equatable {
        /// The last probe was answered, or none has run yet.
        case reachable
        /// Probes go unanswered, since `since` (the first that did); `reason` is the last one's.
        case unreachable(since: Instant, reason: String)
    }

    /// What a probe found.
    enum Answer: Sendable, Equatable {
        /// The database answered: its schema version, or `nil` when it answered with an error
        /// (the schema table missing before the first migration).
        case answered(schema: Int64?)
        /// No answer within ``probeDeadline``, the connection refused or lost: why.
        case unanswered(String)
    }

    /// What the monitor does after a probe.
    enum Action: Sendable, Equatable {
        case none
        /// The database has just become unreachable: fail every operation under way with
        /// `unavailable` (one waiting for a connection, or for an answer on a connection that
        /// will not bring one), and refuse new ones at once.
        case failOperations(reason: String)
        /// The database answers again after a long outage: replace the pool, then call
        /// ``poolReplaced()``; operations are refused until then.
        case replacePool
        /// The database answers again: operations go to the pool from now on.
        case resumed
    }

    /// What the monitor does next.
    enum Step: Sendable, Equatable {
        /// Ask the database: the probe numbered so (they are numbered from 1 as they start).
        case probe(UInt64)
        /// Wait for a wake-up (``want()``), at most this long.
        case wait(Duration)
    }

    /// What a readiness check is told.
    enum Readiness: Sendable, Equatable {
        /// The database is known not to answer: why.
        case refused(String)
        /// Wait for the answer of a probe numbered above this one (started after the check
        /// began), or the next that goes unanswered (which says enough whenever it started).
        case ask(after: UInt64)
    }

    /// The most often the database is asked, and how often while it does not answer.
    static let probeInterval: Duration = .milliseconds(250)
    /// The least time between probes when a readiness check waits for one: its answer is due
    /// within a second, and checks come seconds apart.
    static let readinessInterval: Duration = .milliseconds(50)
    /// An operation not done after this makes the monitor ask the database: it may be waiting
    /// for a pool that cannot connect, or for an answer that will not come.
    static let suspectAfter: Duration = .milliseconds(250)
    /// How long a probe's question may go unanswered on its open connection. A `SELECT` on an
    /// idle connection of its own takes milliseconds even on a loaded server.
    static let probeDeadline: Duration = .milliseconds(750)
    /// How long opening the probe's connection may take (TCP, TLS, authentication: round trips
    /// that a distant database makes slow, though it answers).
    static let connectDeadline: Duration = .seconds(2)
    /// postgres-nio's pool tries to connect again 100 ms × 1.25ⁿ after its n-th failed attempt
    /// (up to a minute), one attempt at a time, and serves leases from nothing else meanwhile:
    /// after an outage this long its next attempt may be a second or more away, so a new pool
    /// replaces it and the database serves again at once.
    static let replacePoolAfter: Duration = .seconds(5)

    private(set) var state: State = .reachable
    /// Probes started so far.
    private var probesStarted: UInt64 = 0
    private var lastProbeEnded: Instant?
    private var probing = false
    private var wanted = false
    /// A readiness check waits for the probe wanted.
    private var wantedForReadiness = false

    /// Why an operation is refused now, with the time the database has not answered for, or
    /// `nil` when it may go to the pool.
    func refusal(at now: Instant) -> (reason: String, for: Duration)? {
        guard case .unreachable(let since, let reason) = state else { return nil }
        return (reason, now - since)
    }

    /// Something suggests the database is gone (an operation slow or failed, the monitor's
    /// connection closed) or someone wants a fresh answer: a probe is due.
    mutating func want() {
        wanted = true
    }

    /// Whether to probe now; called by the monitor's loop, which runs one probe at a time.
    mutating func next(at now: Instant) -> Step {
        let due: Bool =
            switch state {
            case .reachable: wanted
            case .unreachable: true
            }
        guard due, !probing else { return .wait(Self.probeInterval) }
        let interval = wantedForReadiness ? Self.readinessInterval : Self.probeInterval
        if let last = lastProbeEnded, now - last < interval { return .wait(interval - (now - last)) }
        probing = true
        wanted = false
        wantedForReadiness = false
        probesStarted += 1
        return .probe(probesStarted)
    }

    mutating func probeEnded(_ answer: Answer, at now: Instant) -> Action {
        probing = false
        lastProbeEnded = now
        switch (answer, state) {
        case (.answered, .reachable):
            return .none
        case (.answered, .unreachable(let since, _)):
            if now - since >= Self.replacePoolAfter { return .replacePool }
            state = .reachable
            return .resumed
        case (.unanswered(let reason), .reachable):
            state = .unreachable(since: now, reason: reason)
            return .failOperations(reason: reason)
        case (.unanswered(let reason), .unreachable(let since, _)):
            state = .unreachable(since: since, reason: reason)
            return .none
        }
    }

    /// The pool was replaced (``Action/replacePool``): operations go to the new one.
    mutating func poolReplaced() {
        state = .reachable
    }

    /// What a readiness check answers: at once while the database is known not to answer
    /// (probes run every ``probeInterval`` then); otherwise what a probe started from now on
    /// finds (one is due). An answer is never reused: one from before an outage began would
    /// say ready during it.
    mutating func readiness() -> Readiness {
        if case .unreachable(_, let reason) = state { return .refused(reason) }
        wanted = true
        wantedForReadiness = true
        return .ask(after: probesStarted)
    }
}
