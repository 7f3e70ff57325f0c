import HeraldCore
import HeraldStore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The step between the workers and a platform's delivery that backs off a push service's host
/// that keeps failing, written once for every platform: it asks the platform which host each
/// device of a part goes to, and each host's ``HostCircuit`` (in ``HostCircuits``) whether to
/// send; it sends each host's devices, or one as a probe, and gives the others back to the queue
/// (`HostBackedOff`): one due when the host is next tried, the rest after
/// ``HostCircuit/Settings/heldFor`` or as soon as the host answers again. It tells the circuit
/// every outcome, and a send whose failures back its host off no longer holds its batch.
///
/// Nothing is failed for a host backed off: a held device is retried, and ends only when its
/// notification expires, as any retry does.
struct HostIsolation: Sendable {
    let circuits: HostCircuits
    let platform: DevicePlatform

    /// Sends `part` through `delivery`, host by host (all at once), as their circuits allow.
    func send(_ part: DeliveryPart, through delivery: any PlatformDelivery) async {
        let hosts = await delivery.hosts(of: part)
        var part = part
        part.prepared = hosts.prepared
        if hosts.groups.count == 1, let group = hosts.groups.first {
            await send(group.indices, of: part, to: group.host, through: delivery)
            return
        }
        let whole = part
        await withTaskGroup(of: Void.self) { senders in
            for group in hosts.groups {
                senders.addTask { await self.send(group.indices, of: whole, to: group.host, through: delivery) }
            }
        }
    }

    /// Sends the devices of `part` at `indices` (`nil`: all) to `host`, as its circuit allows.
    private func send(_ indices: [Int]?, of part: DeliveryPart, to host: String?, through delivery: any PlatformDelivery) async {
        guard let host else {
            await delivery.send(share(of: part, indices, watch: nil))
            return
        }
        let key = HostCircuits.Key(app: part.app.id, platform: platform, host: host)
        switch circuits.admit(key) {
        case .send:
            await sendWatched(indices, of: part, key: key, through: delivery)
        case .hold(let until):
            hold(indices ?? Array(part.items.indices), of: part, until: until)
        case .probe:
            let all = indices ?? Array(part.items.indices)
            guard let first = all.first else { return }
            if await !probe(first, of: part, key: key, through: delivery) {
                // No answer yet: the probe goes on without the batch, and its device comes back
                // for the next one (should the probe be accepted after all, the device gets it
                // again then: the notification's collapse ID shows it once).
                part.record(Self.held(until: circuits.admitRest(key).holdUntil ?? Date()), at: first)
            }
            let rest = Array(all.dropFirst())
            guard !rest.isEmpty else { return }
            switch circuits.admitRest(key) {
            case .send, .probe:
                await sendWatched(rest, of: part, key: key, through: delivery)
            case .hold(let until):
                hold(rest, of: part, until: until)
            }
        }
    }

    /// Sends the device at `index` alone as the host's probe, and waits for its answer at most
    /// ``HostCircuit/Settings/probeWait`` (a client that tries it again and again, as APNs's
    /// does for a 503, would hold the worker and its whole claim for as long). Returns whether
    /// the send ended within it; if not, it goes on by itself and its verdict reaches the
    /// circuit when it comes.
    private func probe(_ index: Int, of part: DeliveryPart, key: HostCircuits.Key, through delivery: any PlatformDelivery) async -> Bool {
        let watch = HostWatch(circuits: circuits, key: key, probe: true)
        let share = share(of: part, [index], watch: watch)
        let circuits = self.circuits
        let sending = Task {
            await delivery.send(share)
            if !watch.hasVerdict { circuits.probeEnded(key) }
        }
        return await Self.wait(for: sending, atMost: circuits.settings.probeWait)
    }

    /// Sends the devices at `indices` with their host's circuit told each outcome. Should the
    /// host be backed off meanwhile (these failures opened its circuit), the batch goes on
    /// without the send: the devices without an answer yet wait for the host, and the send
    /// finishes by itself (a platform that takes devices as it sends takes no more; what it has
    /// under way, as the APNs client's own retries of a 503, would hold the worker for seconds).
    private func sendWatched(_ indices: [Int]?, of part: DeliveryPart, key: HostCircuits.Key, through delivery: any PlatformDelivery) async {
        let watch = HostWatch(circuits: circuits, key: key, probe: false)
        let share = share(of: part, indices, watch: watch)
        let sending = Task { await delivery.send(share) }
        let circuits = self.circuits
        _ = await Self.wait(for: sending, until: { circuits.isBackedOff(key) })
        guard circuits.isBackedOff(key) else {
            // Not backed off: the send ended.
            return
        }
        let all = indices ?? Array(part.items.indices)
        let missing = Set(part.outcomes.unrecorded(among: all.map { part.positions?[$0] ?? $0 }))
        let left = all.filter { missing.contains(part.positions?[$0] ?? $0) }
        guard !left.isEmpty, case .hold(let until) = circuits.admitRest(key) else { return }
        hold(left, of: part, until: until)
    }

    /// Gives the devices at `indices` back to the queue: the first due at `until`, when the host
    /// is next tried, the others after ``HostCircuit/Settings/heldFor`` (before their
    /// notification's deadline), or as soon as the host answers again (``HostCircuits``' `closed`).
    private func hold(_ indices: [Int], of part: DeliveryPart, until: Date) {
        guard let first = indices.first else { return }
        part.record(Self.held(until: until), at: first)
        guard indices.count > 1 else { return }
        let deadline = part.batch.notification.deadline.addingTimeInterval(-1)
        let rest = Self.held(until: max(until, min(Date().addingTimeInterval(circuits.settings.heldFor.seconds), deadline)))
        for index in indices.dropFirst() { part.record(rest, at: index) }
    }

    /// Waits for `task` to end, at most `limit`, or until `stop` says so (asked every
    /// ``stopCheckInterval``); returns whether it ended. The task goes on either way.
    static func wait(for task: Task<Void, Never>, atMost limit: Duration? = nil, until stop: (@Sendable () -> Bool)? = nil) async -> Bool {
        let waiter = Waiter()
        return await withCheckedContinuation { continuation in
            waiter.start(continuation)
            Task {
                await task.value
                waiter.resume(true)
            }
            guard limit != nil || stop != nil else { return }
            Task {
                let start = ContinuousClock.now
                // Bounded: it ends with the task, at `limit`, or when `stop` says so.
                while !waiter.isDone {
                    try? await Task.sleep(for: stopCheckInterval)
                    if let limit, ContinuousClock.now - start >= limit { break }
                    if let stop, stop() { break }
                }
                waiter.resume(false)
            }
        }
    }

    /// How often a send is looked at for its host backed off.
    static let stopCheckInterval: Duration = .milliseconds(100)

    /// A continuation resumed once, by whichever comes first.
    private final class Waiter: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Bool, Never>?, done: Bool)>((nil, false))

        func start(_ continuation: CheckedContinuation<Bool, Never>) {
            state.withLock { $0.continuation = continuation }
        }

        var isDone: Bool { state.withLock { $0.done } }

        func resume(_ value: Bool) {
            let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard !state.done else { return nil }
                state.done = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: value)
        }
    }

    /// A device held while its host is backed off.
    static func held(until: Date) -> DeliveryOutcome.Result {
        .retry(reason: .gateway(.hostBackedOff), notBefore: until)
    }

    /// The devices of `part` at `indices` (`nil`: all of them, the part itself), their outcomes
    /// told to `watch`.
    private func share(of part: DeliveryPart, _ indices: [Int]?, watch: HostWatch?) -> DeliveryPart {
        var share = part
        share.host = watch
        guard let indices else { return share }
        share.batch.items = indices.map { part.items[$0] }
        share.positions = indices.map { part.positions?[$0] ?? $0 }
        return share
    }
}

/// One host's circuit as a send to it sees it: each outcome is told to it, and the send asks it
/// whether the host was backed off meanwhile.
final class HostWatch: Sendable {
    let circuits: HostCircuits
    let key: HostCircuits.Key
    /// The send is the host's probe: its answer is the circuit's verdict, and it is not stopped.
    let probe: Bool
    /// When the send began.
    let start = Date()
    private let verdict = Atomic<Bool>(false)

    init(circuits: HostCircuits, key: HostCircuits.Key, probe: Bool) {
        self.circuits = circuits
        self.key = key
        self.probe = probe
    }

    /// Tells the circuit what `result` says about the host, if anything; returns the result to
    /// record: a host failure that leaves the host backed off is retried when it is next tried
    /// (the probe's own device, or one that failed as it opened, comes back for the next probe).
    func observe(_ result: DeliveryOutcome.Result) -> DeliveryOutcome.Result {
        guard let signal = HostSignal(result) else { return result }
        if probe { verdict.store(true, ordering: .relaxed) }
        circuits.record(signal, for: key, probe: probe, sentAt: start)
        guard case .failed = signal, case .retry(let reason, let notBefore) = result, let next = circuits.admitRest(key).holdUntil else { return result }
        return .retry(reason: reason, notBefore: max(next, notBefore ?? next))
    }

    /// Whether the probe's answer said anything about the host.
    var hasVerdict: Bool { verdict.load(ordering: .relaxed) }

    /// Whether the host is backed off now (never for the probe itself).
    var isBackedOff: Bool { !probe && circuits.isBackedOff(key) }
}
