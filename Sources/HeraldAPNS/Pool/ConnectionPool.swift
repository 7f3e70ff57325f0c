import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// The connections to one APNs endpoint with one credential, and the queue of notifications
/// waiting for a stream.
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
        /// notifications fail instead of waiting.
        var maximumConnectAttempts: Int
        /// How long an attempt may take, waiting for a stream included.
        var requestTimeout: TimeAmount
        /// Authority of the server, for messages.
        var authority: String
    }

    typealias Machine = PoolStateMachine<RequestJob, ConnectionHandle>

    private struct State {
        var machine: Machine
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        var sweeper: RepeatedTask?
        /// The error of the last failed connection attempt, for jobs failed as unconnectable.
        var lastConnectError: APNSClientError?
    }

    let configuration: Configuration
    private let state: Mutex<State>
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
        let machine = Machine(
            configuration: .init(
                maximumConnections: configuration.maximumConnections, reconnectInitialBackoff: configuration.reconnectInitialBackoff,
                reconnectMaximumBackoff: configuration.reconnectMaximumBackoff, maximumConnectAttempts: configuration.maximumConnectAttempts
            )
        )
        state = Mutex(State(machine: machine))
    }

    // MARK: Work

    /// Queues notifications for sending. Returns false (and queues nothing) after shutdown began.
    func submit(_ jobs: some Collection<RequestJob>) -> Bool {
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

    /// Puts a notification back for another attempt, at once (at the front of the queue) or after `delay`.
    func retry(_ job: RequestJob, after delay: TimeAmount) {
        if delay <= .zero {
            requeue(job, atFront: true)
        } else {
            group.next().scheduleTask(in: delay) { [self] in requeue(job, atFront: false) }
        }
    }

    private func requeue(_ job: RequestJob, atFront: Bool) {
        job.deadline = .now() + configuration.requestTimeout
        let actions = state.withLock { state -> [Machine.Action] in
            startSweeper(&state)
            return state.machine.requeue(job, deadline: job.deadline, atFront: atFront)
        }
        perform(actions)
    }

    /// Notifications that wait for a stream past their deadline fail (a server may allow no
    /// streams at all): checked a few times per request timeout.
    private func startSweeper(_ state: inout State) {
        guard state.sweeper == nil else { return }
        let interval = TimeAmount.nanoseconds(min(max(configuration.requestTimeout.nanoseconds / 4, 10_000_000), 1_000_000_000))
        state.sweeper = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] task in
            guard let self else { return task.cancel() }
            self.failExpired(now: .now())
        }
    }

    /// Fails the queued notifications whose deadline has passed before they got a stream.
    func failExpired(now: NIODeadline) {
        perform(state.withLock { $0.machine.expire(now: now) })
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
            if let batch = completions[index].job.batch?.owner {
                // A batch's answers together: one lock and one release of permits.
                var answers: [(index: Int, answer: ExchangeBatch.Answer)] = []
                while index < completions.count, case let (same, number)? = completions[index].job.batch, same === batch {
                    answers.append((number, RequestJob.answer(completions[index].result)))
                    index += 1
                }
                batch.deliver(contentsOf: answers)
                continue
            }
            guard let sink = completions[index].job.sink else {
                completions[index].job.complete(completions[index].result)
                index += 1
                continue
            }
            var outcomes: [APNSOutcome] = []
            // One copy of each notification, into its outcome.
            while index < completions.count, completions[index].job.sink === sink,
                case .notification(let notification, let number, _) = completions[index].job.request
            {
                outcomes.append(completions[index].job.outcome(completions[index].result, notification: notification, index: number))
                index += 1
            }
            sink.deliver(contentsOf: outcomes)
        }
        jobsFinished(completions.count)
    }

    private func jobsFinished(_ count: Int) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.machine.finished(count) else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Called by connection `id` on its event loop: up to `maximum` notifications to send now.
    func dequeue(for id: Int, maximum: Int) -> [RequestJob] {
        let (jobs, actions) = state.withLock { $0.machine.dequeue(for: id, maximum: maximum) }
        perform(actions)
        return jobs
    }

    // MARK: Connection life

    func connectionReady(_ handle: ConnectionHandle) {
        let actions = state.withLock { $0.machine.connectionReady(handle.id, handle: handle) }
        logger.debug("APNs connection ready", metadata: ["connection": "\(handle.id)"])
        perform(actions)
    }

    func connectionFailed(_ id: Int, error: APNSClientError) {
        let permanent = [.tlsFailed, .http2NotOffered, .addressNotAllowed, .invalidCredentials].contains(error.code)
        let actions = state.withLock { state -> [Machine.Action] in
            state.lastConnectError = error
            return state.machine.connectionFailed(id, permanent: permanent)
        }
        logger.warning("APNs connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
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

    /// Refuses new work, waits until every notification has its outcome, then closes the connections.
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
                    ?? APNSClientError(.connectionFailed, "no connection to \(configuration.authority) could be made")
                for job in jobs { finished(job, .failed(error)) }
            case .failTimedOut(let jobs, let ready):
                let timeout = configuration.requestTimeout
                let why = ready == 0
                    ? "no connection to \(configuration.authority) was ready within \(Self.describe(timeout))"
                    : "no stream was free within \(Self.describe(timeout)) on \(ready) connection\(ready == 1 ? "" : "s") to \(configuration.authority): the server allowed no more concurrent streams"
                logger.warning("APNs notifications timed out waiting for a stream", metadata: ["count": "\(jobs.count)", "reason": "\(why)"])
                let error = APNSClientError(.timedOut, why)
                for job in jobs { finished(job, .failed(error)) }
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
