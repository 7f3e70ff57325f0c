import HeraldCore
import NIOCore

/// The legacy connection and its error recovery (apns-spec §4.4, §4.5) as a plain value: events
/// in, actions out. ``LegacyConnectionDriver`` performs the actions on a channel; tests drive it
/// without sockets.
///
/// One connection at a time. Every written notification gets an increasing identifier and waits
/// in `sent` until it settles: accepted once ``Configuration/settleInterval`` has passed since it
/// was written, or resolved by an error response. The newest ``Configuration/bufferCapacity``
/// entries keep their notification, so they can be sent again; older ones keep only what their
/// outcome needs. When the gateway answers an error it discards everything after the failing
/// notification and closes: what follows is sent again in order on a new connection, or, when it
/// has left the buffer, reported as ``LegacyError/Code/possiblyLost``. Nothing is dropped silently.
///
/// A notification's bookkeeping is one ``Entry`` object that moves from `pending` to `sent` and
/// back, so a hundred thousand a second cost a pointer move each, not a copy of every field. The
/// machine has one owner (the driver, or a test) and is never copied.
struct LegacyStateMachine<Job> {
    struct Configuration {
        var command: LegacyCommand
        /// Sent notifications kept for re-sending (the ring buffer).
        var bufferCapacity: Int
        var settleInterval: TimeAmount
        /// How long frames wait to be batched into one write; negative writes each at once.
        var framingTimeout: TimeAmount
        /// A write is flushed before the next frame would take it over this size.
        var maximumWriteSize = 65_535
        /// A notification written on this many connections that closed without an error response fails.
        var maximumDrops: Int
        var reconnectInitialBackoff: TimeAmount
        var reconnectMaximumBackoff: TimeAmount
        var maximumConnectAttempts: Int

        /// Room for a batch of frames, or for one when each is written at once.
        var writeBufferCapacity: Int {
            framingTimeout < .zero ? 512 : min(maximumWriteSize, 16_384)
        }
    }

    /// A notification's final outcome, for the driver to hand to its job.
    struct Completion {
        var job: Job
        var token: DeviceToken
        var result: LegacyOutcome.Result
        var attempts: Int
    }

    /// What to do after an event, in this order: write, complete, close or connect, arm timers.
    struct Action {
        /// Bytes to write and flush, each one TCP write.
        var writes: [ByteBuffer] = []
        var completions: [Completion] = []
        var connect = false
        var close = false
        /// Call ``flushTimerFired(now:)`` at this time.
        var armFlushTimer: NIODeadline?
        /// Call ``reconnectTimerFired(now:)`` at this time.
        var reconnectAt: NIODeadline?
        /// Shutdown has finished: nothing is pending and the connection is closed.
        var shutdownComplete = false
        /// Things a person should hear about (logged as warnings).
        var warnings: [String] = []
    }

    /// One notification, waiting in `pending` or written and unsettled in `sent`.
    private final class Entry {
        /// `nil` once it has left the ring buffer: it can no longer be sent again.
        var notification: LegacyNotification?
        let token: DeviceToken
        let job: Job
        /// Times written to a connection.
        var attempts = 0
        /// Connections that closed without an error response while it was unsettled.
        var drops = 0
        /// Its identifier on the current connection (while in `sent`).
        var identifier: UInt32 = 0
        /// When its bytes were handed to the connection; `nil` while still batched.
        var writtenAt: NIODeadline?

        init(notification: LegacyNotification, job: Job) {
            self.notification = notification
            token = notification.token
            self.job = job
        }

        func completion(_ result: LegacyOutcome.Result) -> Completion {
            Completion(job: job, token: token, result: result, attempts: attempts)
        }
    }

    private enum ConnectionState {
        case idle
        case connecting
        case connected
        /// Closing after an error response or for shutdown; nothing more is written.
        case closing
        /// Waiting before the next connection attempt.
        case waiting(until: NIODeadline)
    }

    let configuration: Configuration
    private var state = ConnectionState.idle
    private var pending = CircularBuffer<Entry>()
    private var sent = CircularBuffer<Entry>()
    /// Entries at the end of `sent` whose bytes are still in `outgoing`.
    private var unflushed = 0
    private var outgoing: ByteBuffer
    private var flushArmed = false
    /// The next identifier to use (settable for tests of the wrap-around).
    var nextIdentifier: UInt32 = 1
    private var connectFailures = 0
    private var shuttingDown = false
    private var shutdownReported = false

    init(configuration: Configuration) {
        self.configuration = configuration
        outgoing = ByteBufferAllocator().buffer(capacity: configuration.writeBufferCapacity)
    }

    /// Notifications waiting for a connection.
    var pendingCount: Int { pending.count }
    /// Notifications written and not yet settled.
    var unsettledCount: Int { sent.count }

    // MARK: Events

    /// New notifications to send, in order.
    mutating func submit(_ items: some Sequence<(LegacyNotification, Job)>, now: NIODeadline) -> Action {
        var action = Action()
        if shuttingDown {
            for (notification, job) in items {
                action.completions.append(Completion(job: job, token: notification.token, result: .failed(LegacyError(.shutdown, "the client is shutting down")), attempts: 0))
            }
            return action
        }
        for (notification, job) in items {
            pending.append(Entry(notification: notification, job: job))
        }
        drive(now: now, &action)
        return action
    }

    /// The TLS handshake finished.
    mutating func connected(now: NIODeadline) -> Action {
        var action = Action()
        guard case .connecting = state else { return action }
        state = .connected
        connectFailures = 0
        drive(now: now, &action)
        return action
    }

    /// The connection attempt failed (TCP, TLS, or a timeout).
    mutating func connectFailed(_ reason: String, now: NIODeadline) -> Action {
        var action = Action()
        guard case .connecting = state else { return action }
        connectFailures += 1
        if connectFailures >= configuration.maximumConnectAttempts {
            let error = LegacyError(.connectionFailed, "\(reason) (\(connectFailures) attempts in a row); check the gateway address, its certificate and the client certificate")
            connectFailures = 0
            state = .idle
            while let entry = pending.popFirst() {
                action.completions.append(entry.completion(.failed(error)))
            }
        } else {
            let until = now + backoff(afterFailures: connectFailures)
            state = .waiting(until: until)
            action.reconnectAt = until
            action.warnings.append("cannot connect to the gateway: \(reason); trying again in \(backoff(afterFailures: connectFailures).nanoseconds / 1_000_000) ms")
        }
        checkShutdown(&action)
        return action
    }

    /// The gateway's error response (apns-spec §4.4): settles what came before the identifier,
    /// rejects the failing notification and sends what followed again (§4.5).
    mutating func received(_ response: LegacyErrorResponse, now: NIODeadline) -> Action {
        var action = Action()
        guard case .connected = state else { return action }
        let isShutdown = response.status == .shutdown
        let cause: String
        var countsAsDrop = false
        switch position(of: response.identifier) {
        case .at(let index):
            // §4.4: status 10 names the last notification processed; any other status the failing one.
            let processed = isShutdown ? index + 1 : index
            for _ in 0..<processed { Self.settle(sent.removeFirst(), &action) }
            if !isShutdown {
                let failed = sent.removeFirst()
                action.completions.append(failed.completion(.rejected(response.status)))
            }
            cause = isShutdown
                ? "the gateway shut down after notification \(response.identifier)"
                : "the gateway discarded it after notification \(response.identifier) failed with status \(response.status)"
        case .beforeAll:
            if !isShutdown {
                action.warnings.append("the gateway answered status \(response.status) for notification \(response.identifier), which had already settled as accepted; raise settleInterval above the gateway's response time")
            }
            cause = "the gateway discarded it after notification \(response.identifier) (status \(response.status))"
        case .unknown:
            if !sent.isEmpty {
                action.warnings.append("the gateway answered status \(response.status) for identifier \(response.identifier), which this connection did not send; every unsettled notification is sent again")
            }
            cause = "the gateway answered status \(response.status) for an identifier it was not sent (\(response.identifier))"
            countsAsDrop = true
        }
        requeueSent(countingDrop: countsAsDrop, cause: cause, &action)
        state = .closing
        action.close = true
        return action
    }

    /// The connection closed: after an error response or shutdown as expected, otherwise a drop,
    /// which sends every unsettled notification again (§4.5). `reason` says why, when known.
    mutating func connectionClosed(reason: String? = nil, now: NIODeadline) -> Action {
        var action = Action()
        switch state {
        case .connected:
            requeueSent(countingDrop: true, cause: "the connection closed without an error response" + (reason.map { " (\($0))" } ?? ""), &action)
            if pending.isEmpty {
                state = .idle
            } else {
                let until = now + configuration.reconnectInitialBackoff
                state = .waiting(until: until)
                action.reconnectAt = until
            }
        case .closing:
            state = .idle
            drive(now: now, &action)
        case .connecting:
            return connectFailed(reason ?? "the connection closed before TLS was established", now: now)
        case .idle, .waiting:
            break
        }
        checkShutdown(&action)
        return action
    }

    /// The framing timeout passed: write what is batched.
    mutating func flushTimerFired(now: NIODeadline) -> Action {
        var action = Action()
        flushArmed = false
        if case .connected = state { flush(now: now, &action) }
        return action
    }

    /// The back-off after a failed connection passed.
    mutating func reconnectTimerFired(now: NIODeadline) -> Action {
        var action = Action()
        guard case .waiting = state else { return action }
        state = .idle
        drive(now: now, &action)
        checkShutdown(&action)
        return action
    }

    /// Time passed: notifications written at least ``Configuration/settleInterval`` ago without an
    /// error response are accepted.
    mutating func tick(now: NIODeadline) -> Action {
        var action = Action()
        while let first = sent.first, let writtenAt = first.writtenAt, writtenAt + configuration.settleInterval <= now {
            Self.settle(sent.removeFirst(), &action)
        }
        checkShutdown(&action)
        return action
    }

    /// Graceful shutdown: no new notifications; what is batched is written at once; the connection
    /// closes once every notification has its outcome.
    mutating func shutdown(now: NIODeadline) -> Action {
        var action = Action()
        shuttingDown = true
        if case .connected = state { flush(now: now, &action) }
        checkShutdown(&action)
        return action
    }

    // MARK: Internals

    private mutating func drive(now: NIODeadline, _ action: inout Action) {
        switch state {
        case .idle:
            if !pending.isEmpty {
                state = .connecting
                action.connect = true
            }
        case .connected:
            writePending(now: now, &action)
        case .connecting, .closing, .waiting:
            break
        }
    }

    private mutating func writePending(now: NIODeadline, _ action: inout Action) {
        guard !pending.isEmpty else { return }
        let command = configuration.command
        while let entry = pending.popFirst() {
            // Only entries still in the ring buffer are ever re-queued, so the notification is here.
            let notification = entry.notification!
            let size = LegacyEncoder.size(of: notification, command: command)
            if outgoing.readableBytes > 0, outgoing.readableBytes + size > configuration.maximumWriteSize {
                flush(now: now, &action)
            }
            let identifier = takeIdentifier()
            do {
                try LegacyEncoder.write(notification, identifier: identifier, command: command, into: &outgoing)
            } catch {
                action.completions.append(entry.completion(.failed(error)))
                continue
            }
            entry.identifier = identifier
            entry.attempts += 1
            entry.writtenAt = nil
            sent.append(entry)
            unflushed += 1
            // The ring buffer: only the newest `bufferCapacity` can be sent again.
            if sent.count > configuration.bufferCapacity {
                sent[sent.index(sent.startIndex, offsetBy: sent.count - configuration.bufferCapacity - 1)].notification = nil
            }
            if configuration.framingTimeout < .zero { flush(now: now, &action) }
        }
        if outgoing.readableBytes > 0 {
            if shuttingDown {
                flush(now: now, &action)
            } else if !flushArmed {
                flushArmed = true
                action.armFlushTimer = now + configuration.framingTimeout
            }
        }
    }

    private mutating func flush(now: NIODeadline, _ action: inout Action) {
        guard outgoing.readableBytes > 0 else { return }
        action.writes.append(outgoing)
        outgoing = ByteBufferAllocator().buffer(capacity: configuration.writeBufferCapacity)
        var index = sent.index(sent.endIndex, offsetBy: -unflushed)
        while index != sent.endIndex {
            sent[index].writtenAt = now
            index = sent.index(after: index)
        }
        unflushed = 0
    }

    /// Static, so that `Self.settle(sent.removeFirst(), …)` does not copy `self` (and with it the
    /// whole buffer) to call a method while an argument mutates it.
    private static func settle(_ entry: Entry, _ action: inout Action) {
        action.completions.append(entry.completion(.accepted))
    }

    /// Everything still in `sent` goes back to the front of the queue, in order, or fails when it
    /// has left the ring buffer or has seen too many drops.
    private mutating func requeueSent(countingDrop: Bool, cause: String, _ action: inout Action) {
        var again: [Entry] = []
        var lost = 0
        while let entry = sent.popFirst() {
            guard entry.notification != nil else {
                lost += 1
                let error = LegacyError(
                    .possiblyLost,
                    "\(cause); it had already left the \(configuration.bufferCapacity)-notification re-send buffer, so it could not be sent again (raise bufferCapacity)"
                )
                action.completions.append(entry.completion(.failed(error)))
                continue
            }
            let drops = entry.drops + (countingDrop ? 1 : 0)
            if drops >= configuration.maximumDrops {
                let error = LegacyError(.connectionFailed, "\(cause), \(drops) times with it unanswered; it may or may not have been delivered")
                action.completions.append(entry.completion(.failed(error)))
                continue
            }
            entry.drops = drops
            again.append(entry)
        }
        if lost > 0 {
            action.warnings.append("\(lost) notification(s) could not be sent again: \(cause), and they had left the \(configuration.bufferCapacity)-notification buffer")
        }
        for item in again.reversed() { pending.prepend(item) }
        outgoing.clear()
        unflushed = 0
    }

    private mutating func checkShutdown(_ action: inout Action) {
        guard shuttingDown, !shutdownReported, pending.isEmpty, sent.isEmpty else { return }
        switch state {
        case .connected:
            state = .closing
            action.close = true
        case .idle, .waiting:
            state = .idle
            shutdownReported = true
            action.shutdownComplete = true
        case .connecting, .closing:
            break  // finishes when the connection opens (and is closed) or closes
        }
    }

    private enum Position {
        case at(Int)
        case beforeAll
        case unknown
    }

    /// Where `identifier` is in `sent`. Identifiers are consecutive on a connection (0 is skipped
    /// when they wrap), so the offset from the first one finds it at once.
    private func position(of identifier: UInt32) -> Position {
        guard identifier != 0, let first = sent.first?.identifier else { return .unknown }
        let offset = Int(identifier &- first)
        if offset < sent.count, sent[sent.index(sent.startIndex, offsetBy: offset)].identifier == identifier {
            return .at(offset)
        }
        if let index = sent.firstIndex(where: { $0.identifier == identifier }) {
            return .at(sent.distance(from: sent.startIndex, to: index))
        }
        if Int32(bitPattern: identifier &- first) < 0 { return .beforeAll }
        return .unknown
    }

    private mutating func takeIdentifier() -> UInt32 {
        let identifier = nextIdentifier
        nextIdentifier &+= 1
        if nextIdentifier == 0 { nextIdentifier = 1 }
        return identifier
    }

    private func backoff(afterFailures failures: Int) -> TimeAmount {
        let doubled = configuration.reconnectInitialBackoff.nanoseconds << min(failures - 1, 20)
        return .nanoseconds(min(doubled, configuration.reconnectMaximumBackoff.nanoseconds))
    }
}
