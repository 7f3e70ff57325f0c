import HeraldHTTP2
import Logging
import NIOCore
import Synchronization

/// The HTTP/2 connections to one server with one credential, and the queue of requests waiting
/// for a stream. It belongs to no platform: it knows a request only as an ``HTTP2Job`` and
/// hands what ends to the platform's ``HTTP2Rules``.
///
/// The decisions are ``PoolStateMachine``'s; this class holds it under one lock, performs its
/// actions (waking a connection on its event loop, opening one, scheduling a reconnect, failing
/// jobs) and keeps what is not a value: the timer that fails overdue jobs and the shutdown waiters.
final class ConnectionPool: Sendable {
    struct Configuration {
        var maximumConnections: Int
        var reconnectInitialBackoff: TimeAmount
        var reconnectMaximumBackoff: TimeAmount
        /// Consecutive failed connection attempts, with no connection up, after which queued
        /// requests fail instead of waiting.
        var maximumConnectAttempts: Int
        /// How long an attempt may take, waiting for a stream included.
        var requestTimeout: TimeAmount
        /// Authority of the server, for messages.
        var authority: String
        /// The server's kind, for log messages ("APNs", "FCM", "push service").
        var name: String
    }

    typealias Machine = PoolStateMachine<any HTTP2Job, ConnectionHandle>

    private struct State {
        var machine: Machine
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        var sweeper: RepeatedTask?
        /// The error of the last failed connection attempt, for jobs failed as unconnectable.
        var lastConnectError: TransportError?
    }

    let configuration: Configuration
    private let state: Mutex<State>
    private let group: any EventLoopGroup
    let logger: Logger
    /// The platform's rules: where ended requests go.
    let rules: any HTTP2Rules
    private let opener: @Sendable (Int, ConnectionPool) -> Void

    /// - Parameter opener: starts connecting connection `id`; it reports back with
    ///   ``connectionReady(_:)`` or ``connectionFailed(_:error:)``.
    init(
        configuration: Configuration, rules: any HTTP2Rules, group: any EventLoopGroup, logger: Logger,
        opener: @escaping @Sendable (Int, ConnectionPool) -> Void
    ) {
        self.configuration = configuration
        self.rules = rules
        self.group = group
        self.logger = logger
        self.opener = opener
        let machine = Machine(
            configuration: .init(
                maximumConnections: configuration.maximumConnections, reconnectInitialBackoff: configuration.reconnectInitialBackoff,
                reconnectMaximumBackoff: configuration.reconnectMaximumBackoff, maximumConnectAttempts: configuration.maximumConnectAttempts
            )
        )
        state = Mutex(State(machine: machine))
    }

    // MARK: Work

    /// Queues requests for sending. Returns false (and queues nothing) after shutdown began.
    func submit(_ jobs: [any HTTP2Job]) -> Bool {
        let deadline = NIODeadline.now() + configuration.requestTimeout
        for job in jobs { job.deadline = deadline }
        let actions = state.withLock { state -> [Machine.Action]? in
            guard let actions = state.machine.submit(jobs, deadline: deadline) else { return nil }
            startSweeper(&state)
            return actions
        }
        guard let actions else { return false }
        perform(actions)
        return true
    }

    /// Puts a request back for another attempt, at once (at the front of the queue) or after `delay`.
    func retry(_ job: any HTTP2Job, after delay: TimeAmount) {
        if delay <= .zero {
            requeue(job, atFront: true)
        } else {
            group.next().scheduleTask(in: delay) { [self] in requeue(job, atFront: false) }
        }
    }

    private func requeue(_ job: any HTTP2Job, atFront: Bool) {
        job.deadline = .now() + configuration.requestTimeout
        let actions = state.withLock { state -> [Machine.Action] in
            startSweeper(&state)
            return state.machine.requeue(job, deadline: job.deadline, atFront: atFront)
        }
        perform(actions)
    }

    /// Requests that wait for a stream past their deadline fail (a server may allow no
    /// streams at all): checked a few times per request timeout.
    private func startSweeper(_ state: inout State) {
        guard state.sweeper == nil else { return }
        let interval = TimeAmount.nanoseconds(min(max(configuration.requestTimeout.nanoseconds / 4, 10_000_000), 1_000_000_000))
        state.sweeper = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] task in
            guard let self else { return task.cancel() }
            self.failExpired(now: .now())
        }
    }

    /// Fails the queued requests whose deadline has passed before they got a stream.
    func failExpired(now: NIODeadline) {
        perform(state.withLock { $0.machine.expire(now: now) })
    }

    /// A request failed without an answer its rules could judge.
    func fail(_ job: any HTTP2Job, _ error: TransportError) {
        fail(CollectionOfOne(job), error)
    }

    /// Requests failed for one reason: delivered together.
    private func fail(_ jobs: some Collection<any HTTP2Job>, _ error: TransportError) {
        guard !jobs.isEmpty else { return }
        for job in jobs { rules.fail(job, error) }
        finished(Array(jobs))
    }

    /// Requests reached their final results: their platform delivers them, in one go per caller.
    func finished(_ jobs: [any HTTP2Job]) {
        rules.finished(jobs)
        jobsFinished(jobs.count)
    }

    private func jobsFinished(_ count: Int) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.machine.finished(count) else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Called by connection `id` on its event loop: up to `maximum` requests to send now.
    func dequeue(for id: Int, maximum: Int) -> [any HTTP2Job] {
        let (jobs, actions) = state.withLock { $0.machine.dequeue(for: id, maximum: maximum) }
        perform(actions)
        return jobs
    }

    // MARK: Connection life

    func connectionReady(_ handle: ConnectionHandle) {
        let actions = state.withLock { $0.machine.connectionReady(handle.id, handle: handle) }
        logger.debug("\(configuration.name) connection ready", metadata: ["connection": "\(handle.id)"])
        perform(actions)
    }

    func connectionFailed(_ id: Int, error: TransportError) {
        let permanent = error.isPermanent
        let actions = state.withLock { state -> [Machine.Action] in
            state.lastConnectError = error
            return state.machine.connectionFailed(id, permanent: permanent)
        }
        logger.warning("\(configuration.name) connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
        perform(actions)
    }

    /// Connection `id` takes no more work (GOAWAY, rolled, recycled); it closes when its streams end.
    func connectionDraining(_ id: Int) {
        perform(state.withLock { $0.machine.connectionDraining(id) })
    }

    func connectionClosed(_ id: Int) {
        perform(state.withLock { $0.machine.connectionClosed(id) })
    }

    // MARK: Shutdown

    /// Refuses new work, waits until every request has its outcome, then closes the connections.
    func shutdown() async {
        let alreadyIdle = state.withLock { $0.machine.beginShutdown() }
        if !alreadyIdle {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.machine.activeJobs == 0 { return true }
                    state.drainWaiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }
        let handles = state.withLock { state in
            state.sweeper?.cancel()
            state.sweeper = nil
            return state.machine.closeAll()
        }
        for handle in handles {
            try? await handle.close().get()
        }
    }

    /// Whether ``shutdown()`` has begun.
    var isShuttingDown: Bool { state.withLock { $0.machine.isShuttingDown } }

    /// Open connections and connections being opened.
    var connectionCount: Int { state.withLock { $0.machine.connectionCount } }

    // MARK: Performing

    private func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .wake(let handle):
                handle.wake()
            case .open(let id):
                opener(id, self)
            case .scheduleReconnect(let delay):
                group.next().scheduleTask(in: delay) { [self] in
                    perform(state.withLock { $0.machine.reconnectDue() })
                }
            case .failUnconnectable(let jobs):
                let error = state.withLock { $0.lastConnectError }
                    ?? TransportError(.connectionFailed, "no connection to \(configuration.authority) could be made")
                fail(jobs, error)
            case .failTimedOut(let jobs, let ready):
                let timeout = configuration.requestTimeout
                let why = ready == 0
                    ? "no connection to \(configuration.authority) was ready within \(timeout.shortDescription)"
                    : "no stream was free within \(timeout.shortDescription) on \(ready) connection\(ready == 1 ? "" : "s") to \(configuration.authority): the server allowed no more concurrent streams"
                logger.warning("\(configuration.name) requests timed out waiting for a stream", metadata: ["count": "\(jobs.count)", "reason": "\(why)"])
                fail(jobs, TransportError(.timedOut, why))
            case .close(let handle):
                _ = handle.close()
            }
        }
    }
}

/// The pool's view of a connection: its ID, and how to wake it or close it on its event loop.
final class ConnectionHandle: Sendable {
    let id: Int
    let channel: any Channel
    private let handler: NIOLoopBound<ConnectionHandler>
    /// A pull is scheduled on the event loop and has not started: a wake meanwhile need not
    /// schedule another (each is a task on the loop and, from another thread, a write to its
    /// eventfd: one per request when requests come one at a time, as Web Push's do).
    private let pullScheduled = Atomic<Bool>(false)

    init(id: Int, channel: any Channel, handler: ConnectionHandler) {
        self.id = id
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// Asks the connection to pull queued work.
    func wake() {
        // Work queued before this wake is seen by the scheduled pull: it clears the flag before
        // it pulls, so a wake that finds the flag set came before the pull looked at the queue.
        guard !pullScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let handler = self.handler
        channel.eventLoop.execute { [self] in
            pullScheduled.store(false, ordering: .sequentiallyConsistent)
            handler.value.pull()
        }
    }

    /// Stops new streams and closes once the open ones end (they have all ended at shutdown).
    func close() -> EventLoopFuture<Void> {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.drainAndClose() }
        return channel.closeFuture
    }
}
