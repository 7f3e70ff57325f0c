import NIOCore

/// Every decision of the connection pool, as a value: which connection to wake, when to open
/// another, how long to back off after a failure, when queued work fails, when shutdown is done.
/// It takes events and returns ``Action``s; ``ConnectionPool`` holds it under a lock and performs
/// them. Generic over the job and the connection handle so it is tested without sockets or clocks.
///
/// Invariants, kept by every event:
/// - A connection is in `entries` from the moment it is opened until it closed or failed;
///   `handle` is set once it is ready.
/// - `idle` lists exactly the ready, accepting connections that last found the queue empty with
///   streams to spare; a connection is never both idle and waking.
/// - `opening` counts entries without a handle; at most one connection is opened at a time, and
///   none while a reconnect back-off is pending.
/// - `activeJobs` counts the jobs taken and not yet finished: queued, on a connection or waiting
///   for a retry.
struct PoolStateMachine<Job: Sendable, Handle: Sendable>: Sendable {
    struct Configuration {
        var maximumConnections: Int
        var reconnectInitialBackoff: TimeAmount
        var reconnectMaximumBackoff: TimeAmount
        /// Consecutive failed connection attempts, with no connection up, after which queued jobs
        /// fail instead of waiting.
        var maximumConnectAttempts: Int
    }

    enum Action: Sendable {
        /// Ask this connection to pull from the queue (on its own event loop).
        case wake(Handle)
        /// Start connecting a new connection with this ID; report back with
        /// ``connectionReady(_:handle:)`` or ``connectionFailed(_:permanent:)``.
        case open(id: Int)
        /// Call ``reconnectDue()`` after this back-off.
        case scheduleReconnect(after: TimeAmount)
        /// These jobs failed: no connection could be made (the error of the last attempt applies).
        case failUnconnectable([Job])
        /// These jobs waited for a stream past their deadline; `readyConnections` were up.
        case failTimedOut([Job], readyConnections: Int)
        /// Close this connection: it became ready after shutdown closed the others.
        case close(Handle)
    }

    private struct Entry {
        var handle: Handle?
        var accepting = true
        var idle = false
        var waking = false
        /// Streams it had free when it last pulled.
        var spare = 0
    }

    private struct Queued {
        var job: Job
        var deadline: NIODeadline
    }

    let configuration: Configuration
    private var queue = CircularBuffer<Queued>(initialCapacity: 1024)
    private var entries: [Int: Entry] = [:]
    private var idle: [Int] = []
    private var opening = 0
    private var nextID = 0
    private var consecutiveFailures = 0
    private var reconnectScheduled = false
    private(set) var activeJobs = 0
    private(set) var isShuttingDown = false
    /// Shutdown has closed the connections: one that becomes ready now is closed at once.
    private var closing = false
    /// No queued job's deadline is earlier (it may be later: dequeued jobs are not subtracted).
    private var earliestQueuedDeadline = NIODeadline.distantFuture

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: Queries

    /// Open connections and connections being opened.
    var connectionCount: Int { entries.count }
    /// Jobs waiting for a stream.
    var queuedCount: Int { queue.count }
    /// Ready connections that take new work.
    var readyConnections: Int { entries.values.reduce(0) { $0 + ($1.handle != nil && $1.accepting ? 1 : 0) } }

    // MARK: Work

    /// New jobs, at the back of the queue; `nil` (and nothing queued) once shutdown began.
    mutating func submit(_ jobs: some Collection<Job>, deadline: NIODeadline) -> [Action]? {
        guard !isShuttingDown else { return nil }
        activeJobs += jobs.count
        for job in jobs { queue.append(Queued(job: job, deadline: deadline)) }
        earliestQueuedDeadline = min(earliestQueuedDeadline, deadline)
        return dispatch()
    }

    /// A job already counted goes back for another attempt: at the front when it is re-sent at
    /// once (it was never processed, or its connection went away), at the back after a back-off.
    mutating func requeue(_ job: Job, deadline: NIODeadline, atFront: Bool) -> [Action] {
        if atFront {
            queue.prepend(Queued(job: job, deadline: deadline))
        } else {
            queue.append(Queued(job: job, deadline: deadline))
        }
        earliestQueuedDeadline = min(earliestQueuedDeadline, deadline)
        return dispatch()
    }

    /// Connection `id` has `maximum` streams free: the jobs it should send now.
    mutating func dequeue(for id: Int, maximum: Int) -> (jobs: [Job], actions: [Action]) {
        guard var entry = entries[id], entry.accepting else { return ([], []) }
        let count = min(maximum, queue.count)
        var jobs: [Job] = []
        jobs.reserveCapacity(count)
        for _ in 0..<count { jobs.append(queue.removeFirst().job) }
        entry.waking = false
        entry.spare = maximum - count
        if queue.isEmpty, entry.spare > 0, !entry.idle {
            entry.idle = true
            idle.append(id)
        }
        entries[id] = entry
        return (jobs, queue.isEmpty ? [] : dispatch())
    }

    /// Time passed: queued jobs whose deadline is at or before `now` fail, as no stream was free
    /// for them in time (a server may allow no streams at all).
    mutating func expire(now: NIODeadline) -> [Action] {
        guard earliestQueuedDeadline <= now else { return [] }
        var expired: [Job] = []
        var kept = CircularBuffer<Queued>(initialCapacity: max(16, queue.count))
        var earliest = NIODeadline.distantFuture
        while let queued = queue.popFirst() {
            if queued.deadline <= now {
                expired.append(queued.job)
            } else {
                kept.append(queued)
                earliest = min(earliest, queued.deadline)
            }
        }
        queue = kept
        earliestQueuedDeadline = earliest
        return expired.isEmpty ? [] : [.failTimedOut(expired, readyConnections: readyConnections)]
    }

    /// `count` jobs reached their final outcome. Returns true when that ends a shutdown's wait.
    mutating func finished(_ count: Int) -> Bool {
        activeJobs -= count
        return activeJobs == 0 && isShuttingDown
    }

    // MARK: Connection life

    mutating func connectionReady(_ id: Int, handle: Handle) -> [Action] {
        opening -= 1
        consecutiveFailures = 0
        entries[id, default: Entry()].handle = handle
        return closing ? [.close(handle)] : []
    }

    /// Connection `id` could not be set up. `permanent`: trying again cannot help (TLS, credentials).
    mutating func connectionFailed(_ id: Int, permanent: Bool) -> [Action] {
        // A connection can fail both in its bootstrap and in its handler: count it once.
        guard let entry = entries[id], entry.handle == nil else { return [] }
        opening -= 1
        entries[id] = nil
        consecutiveFailures += 1
        guard !queue.isEmpty else { return [] }
        if readyConnections == 0 && (permanent || consecutiveFailures >= configuration.maximumConnectAttempts) {
            var jobs: [Job] = []
            while let queued = queue.popFirst() { jobs.append(queued.job) }
            consecutiveFailures = 0
            return [.failUnconnectable(jobs)]
        }
        guard !reconnectScheduled else { return [] }
        reconnectScheduled = true
        let exponent = min(consecutiveFailures - 1, 16)
        let delay = min(configuration.reconnectInitialBackoff * (1 << exponent), configuration.reconnectMaximumBackoff)
        return [.scheduleReconnect(after: delay)]
    }

    /// The back-off after a failed connection ended.
    mutating func reconnectDue() -> [Action] {
        reconnectScheduled = false
        return dispatch()
    }

    /// Connection `id` takes no more work (GOAWAY, rolled, recycled); it closes when its streams end.
    mutating func connectionDraining(_ id: Int) -> [Action] {
        guard var entry = entries[id], entry.accepting else { return [] }
        entry.accepting = false
        entry.idle = false
        entry.waking = false
        entries[id] = entry
        idle.removeAll { $0 == id }
        return dispatch()
    }

    mutating func connectionClosed(_ id: Int) -> [Action] {
        entries[id] = nil
        idle.removeAll { $0 == id }
        return dispatch()
    }

    // MARK: Shutdown

    /// Refuses new work from now on. Returns true when no job is active, so shutdown need not wait.
    mutating func beginShutdown() -> Bool {
        isShuttingDown = true
        return activeJobs == 0
    }

    /// Every job has its outcome: the connections to close. One that becomes ready later is
    /// closed as it comes (``Action/close(_:)``).
    mutating func closeAll() -> [Handle] {
        closing = true
        return entries.values.compactMap(\.handle)
    }

    // MARK: Dispatching

    /// Wakes idle connections for what is queued, and opens one more connection when the queue
    /// holds more than the open ones can take.
    private mutating func dispatch() -> [Action] {
        var actions: [Action] = []
        if queue.isEmpty { return actions }
        // Connections already woken will take what they had spare; wake idle ones for the rest.
        var capacity = 0
        var accepting = 0
        for entry in entries.values where entry.accepting {
            accepting += 1
            if entry.waking { capacity += entry.spare }
        }
        while capacity < queue.count, let id = idle.popLast() {
            guard var entry = entries[id], let handle = entry.handle else { continue }
            entry.idle = false
            entry.waking = true
            entries[id] = entry
            capacity += entry.spare
            actions.append(.wake(handle))
        }
        if queue.count > capacity, opening == 0, !reconnectScheduled, accepting < configuration.maximumConnections,
            !isShuttingDown || activeJobs > 0
        {
            let id = nextID
            nextID += 1
            opening += 1
            entries[id] = Entry()
            actions.append(.open(id: id))
        }
        return actions
    }
}
