import HeraldCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// The connections to one APNs endpoint with one credential, and the queue of notifications
/// waiting for a stream.
///
/// Connections are opened lazily, one at a time, when queued work exceeds what the open
/// connections can take; a connection with free streams pulls from the queue on its own event
/// loop. The queue, the connection list and the count of unfinished notifications share one lock.
final class ConnectionPool: Sendable {
    struct Configuration {
        var maximumConnections: Int
        var reconnectInitialBackoff: TimeAmount
        var reconnectMaximumBackoff: TimeAmount
        /// Consecutive failed connection attempts, with no connection up, after which queued
        /// notifications fail instead of waiting.
        var maximumConnectAttempts: Int
        /// How long an attempt may take, waiting for a stream included.
        var requestTimeout: TimeAmount
        /// Authority of the server, for messages.
        var authority: String
    }

    private struct Entry {
        var handle: ConnectionHandle?
        var accepting = true
        var idle = false
        var waking = false
        var spare = 0
    }

    private struct State {
        var queue = CircularBuffer<RequestJob>(initialCapacity: 1024)
        var entries: [Int: Entry] = [:]
        var idle: [Int] = []
        var opening = 0
        var nextID = 0
        var consecutiveFailures = 0
        var reconnectScheduled = false
        var activeJobs = 0
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        var shuttingDown = false
        /// No queued job's deadline is earlier (it may be later: dequeued jobs are not subtracted).
        var earliestQueuedDeadline = NIODeadline.distantFuture
        var sweeper: RepeatedTask?
        /// Shutdown has closed the connections: one that becomes ready now is closed at once.
        var closing = false
    }

    private enum Action {
        case wake(ConnectionHandle)
        case open(Int)
        case reconnect(after: TimeAmount)
        case fail([RequestJob], APNSClientError)
    }

    let configuration: Configuration
    private let state = Mutex(State())
    private let group: any EventLoopGroup
    let logger: Logger
    private let opener: @Sendable (Int, ConnectionPool) -> Void

    /// - Parameter opener: starts connecting connection `id`; it reports back with
    ///   ``connectionReady(_:)`` or ``connectionFailed(_:error:)``.
    init(configuration: Configuration, group: any EventLoopGroup, logger: Logger, opener: @escaping @Sendable (Int, ConnectionPool) -> Void) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.opener = opener
    }

    // MARK: Work

    /// Queues notifications for sending. Returns false (and queues nothing) after shutdown began.
    func submit(_ jobs: some Collection<RequestJob>) -> Bool {
        let deadline = NIODeadline.now() + configuration.requestTimeout
        for job in jobs { job.deadline = deadline }
        let actions = state.withLock { state -> [Action]? in
            guard !state.shuttingDown else { return nil }
            state.activeJobs += jobs.count
            state.queue.append(contentsOf: jobs)
            queued(deadline, &state)
            return dispatch(&state)
        }
        guard let actions else { return false }
        perform(actions)
        return true
    }

    /// Puts a notification back for another attempt, at once (at the front of the queue) or after `delay`.
    func retry(_ job: RequestJob, after delay: TimeAmount) {
        if delay <= .zero {
            job.deadline = .now() + configuration.requestTimeout
            let actions = state.withLock { state -> [Action] in
                state.queue.prepend(job)
                queued(job.deadline, &state)
                return dispatch(&state)
            }
            perform(actions)
        } else {
            group.next().scheduleTask(in: delay) { [self] in
                job.deadline = .now() + configuration.requestTimeout
                let actions = state.withLock { state -> [Action] in
                    state.queue.append(job)
                    queued(job.deadline, &state)
                    return dispatch(&state)
                }
                perform(actions)
            }
        }
    }

    private func queued(_ deadline: NIODeadline, _ state: inout State) {
        state.earliestQueuedDeadline = min(state.earliestQueuedDeadline, deadline)
        if state.sweeper == nil {
            // Notifications that wait for a stream past their deadline fail (a server may allow
            // no streams at all): checked a few times per request timeout.
            let interval = TimeAmount.nanoseconds(min(max(configuration.requestTimeout.nanoseconds / 4, 10_000_000), 1_000_000_000))
            state.sweeper = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] task in
                guard let self else { return task.cancel() }
                self.failExpired(now: .now())
            }
        }
    }

    /// Fails the queued notifications whose deadline has passed before they got a stream.
    func failExpired(now: NIODeadline) {
        let (expired, ready) = state.withLock { state -> ([RequestJob], Int) in
            guard state.earliestQueuedDeadline <= now else { return ([], 0) }
            var expired: [RequestJob] = []
            var kept = CircularBuffer<RequestJob>(initialCapacity: max(16, state.queue.count))
            var earliest = NIODeadline.distantFuture
            while let job = state.queue.popFirst() {
                if job.deadline <= now {
                    expired.append(job)
                } else {
                    kept.append(job)
                    earliest = min(earliest, job.deadline)
                }
            }
            state.queue = kept
            state.earliestQueuedDeadline = earliest
            return (expired, state.entries.values.filter { $0.handle != nil && $0.accepting }.count)
        }
        guard !expired.isEmpty else { return }
        let timeout = configuration.requestTimeout
        let why = ready == 0
            ? "no connection to \(configuration.authority) was ready within \(Self.describe(timeout))"
            : "no stream was free within \(Self.describe(timeout)) on \(ready) connection\(ready == 1 ? "" : "s") to \(configuration.authority): the server allowed no more concurrent streams"
        let error = APNSClientError(.timedOut, why)
        logger.warning("APNs notifications timed out waiting for a stream", metadata: ["count": "\(expired.count)", "reason": "\(why)"])
        for job in expired { finished(job, .failed(error)) }
    }

    static func describe(_ amount: TimeAmount) -> String {
        let milliseconds = amount.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    /// A notification reached its final outcome.
    func finished(_ job: RequestJob, _ result: RetryDecision.FinalResult) {
        job.complete(result)
        jobsFinished(1)
    }

    /// Notifications reached their final outcomes: delivered with one lock per bulk send.
    func finished(_ completions: [(job: RequestJob, result: RetryDecision.FinalResult)]) {
        var index = 0
        while index < completions.count {
            guard let sink = completions[index].job.bulk?.sink else {
                completions[index].job.complete(completions[index].result)
                index += 1
                continue
            }
            var outcomes: [APNSOutcome] = []
            while index < completions.count, let next = completions[index].job.bulk, next.sink === sink {
                outcomes.append(completions[index].job.outcome(completions[index].result, notification: next.notification, index: next.index))
                index += 1
            }
            sink.deliver(contentsOf: outcomes)
        }
        jobsFinished(completions.count)
    }

    private func jobsFinished(_ count: Int) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.activeJobs -= count
            guard state.activeJobs == 0 else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Called by connection `id` on its event loop: up to `maximum` notifications to send now.
    func dequeue(for id: Int, maximum: Int) -> [RequestJob] {
        var jobs: [RequestJob] = []
        let actions = state.withLock { state -> [Action] in
            guard var entry = state.entries[id], entry.accepting else { return [] }
            let count = min(maximum, state.queue.count)
            if count > 0 {
                jobs.reserveCapacity(count)
                for _ in 0..<count { jobs.append(state.queue.removeFirst()) }
            }
            entry.waking = false
            entry.spare = maximum - count
            if state.queue.isEmpty, entry.spare > 0, !entry.idle {
                entry.idle = true
                state.idle.append(id)
            }
            state.entries[id] = entry
            return state.queue.isEmpty ? [] : dispatch(&state)
        }
        perform(actions)
        return jobs
    }

    // MARK: Connection life

    func connectionReady(_ handle: ConnectionHandle) {
        let closed = state.withLock { state -> Bool in
            state.opening -= 1
            state.consecutiveFailures = 0
            state.entries[handle.id, default: Entry()].handle = handle
            return state.closing
        }
        logger.debug("APNs connection ready", metadata: ["connection": "\(handle.id)"])
        // Set up after shutdown closed the others: it has no work and would stay open.
        if closed { _ = handle.close() }
    }

    func connectionFailed(_ id: Int, error: APNSClientError) {
        let actions = state.withLock { state -> [Action] in
            // A connection can fail both in its bootstrap and in its handler: report it once.
            guard state.entries[id] != nil, state.entries[id]?.handle == nil else { return [] }
            state.opening -= 1
            state.entries[id] = nil
            state.consecutiveFailures += 1
            guard !state.queue.isEmpty else { return [] }
            let live = state.entries.values.contains { $0.handle != nil && $0.accepting }
            let permanent = error.code == .tlsFailed || error.code == .invalidCredentials
            if !live && (permanent || state.consecutiveFailures >= configuration.maximumConnectAttempts) {
                var jobs: [RequestJob] = []
                while let job = state.queue.popFirst() { jobs.append(job) }
                state.consecutiveFailures = 0
                return [.fail(jobs, error)]
            }
            guard !state.reconnectScheduled else { return [] }
            state.reconnectScheduled = true
            let exponent = min(state.consecutiveFailures - 1, 16)
            let delay = min(configuration.reconnectInitialBackoff * (1 << exponent), configuration.reconnectMaximumBackoff)
            return [.reconnect(after: delay)]
        }
        logger.warning("APNs connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
        perform(actions)
    }

    /// Connection `id` takes no more work (GOAWAY, rolled, recycled); it closes when its streams end.
    func connectionDraining(_ id: Int) {
        let actions = state.withLock { state -> [Action] in
            guard var entry = state.entries[id], entry.accepting else { return [] }
            entry.accepting = false
            entry.idle = false
            state.entries[id] = entry
            state.idle.removeAll { $0 == id }
            return dispatch(&state)
        }
        perform(actions)
    }

    func connectionClosed(_ id: Int) {
        let actions = state.withLock { state -> [Action] in
            state.entries[id] = nil
            state.idle.removeAll { $0 == id }
            return dispatch(&state)
        }
        perform(actions)
    }

    // MARK: Shutdown

    /// Refuses new work, waits until every notification has its outcome, then closes the connections.
    func shutdown() async {
        let alreadyIdle = state.withLock { state -> Bool in
            state.shuttingDown = true
            return state.activeJobs == 0
        }
        if !alreadyIdle {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.activeJobs == 0 { return true }
                    state.drainWaiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }
        let handles = state.withLock { state in
            state.sweeper?.cancel()
            state.sweeper = nil
            state.closing = true
            return state.entries.values.compactMap(\.handle)
        }
        for handle in handles {
            try? await handle.close().get()
        }
    }

    /// Whether ``shutdown()`` has begun.
    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Open connections and connections being opened.
    var connectionCount: Int { state.withLock { $0.entries.count } }

    // MARK: Dispatching

    private func dispatch(_ state: inout State) -> [Action] {
        var actions: [Action] = []
        if state.queue.isEmpty { return actions }
        // Wake idle connections: they pull on their own event loops.
        var capacity = 0
        while capacity < state.queue.count, let id = state.idle.popLast() {
            guard var entry = state.entries[id], let handle = entry.handle else { continue }
            entry.idle = false
            entry.waking = true
            state.entries[id] = entry
            capacity += entry.spare
            actions.append(.wake(handle))
        }
        for entry in state.entries.values where entry.waking && entry.accepting {
            capacity += entry.spare
        }
        // Grow when what is queued is more than the open connections can take.
        let accepting = state.entries.values.filter(\.accepting).count
        if state.queue.count > capacity, state.opening == 0, !state.reconnectScheduled,
            accepting < configuration.maximumConnections, !state.shuttingDown || state.activeJobs > 0
        {
            let id = state.nextID
            state.nextID += 1
            state.opening += 1
            state.entries[id] = Entry()
            actions.append(.open(id))
        }
        return actions
    }

    private func perform(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .wake(let handle):
                handle.wake()
            case .open(let id):
                opener(id, self)
            case .reconnect(let delay):
                group.next().scheduleTask(in: delay) { [self] in
                    let actions = state.withLock { state -> [Action] in
                        state.reconnectScheduled = false
                        return dispatch(&state)
                    }
                    perform(actions)
                }
            case .fail(let jobs, let error):
                for job in jobs { finished(job, .failed(error)) }
            }
        }
    }
}

/// The pool's view of a connection: its ID, and how to wake it or close it on its event loop.
final class ConnectionHandle: Sendable {
    let id: Int
    let channel: any Channel
    private let handler: NIOLoopBound<ConnectionHandler>

    init(id: Int, channel: any Channel, handler: ConnectionHandler) {
        self.id = id
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// Asks the connection to pull queued work.
    func wake() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.pull() }
    }

    /// Stops new streams and closes once the open ones end (they have all ended at shutdown).
    func close() -> EventLoopFuture<Void> {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.drainAndClose() }
        return channel.closeFuture
    }
}
