import HeraldCore
import HeraldStore
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The workers' ``HostCircuit``s, one per app, platform and push-service host that has failed
/// lately: long-lived (a configuration reload keeps them: the hosts are as down as they were) and
/// bounded (``HostCircuit/Settings/maximumHostsPerApp`` per app and platform, only for apps the
/// configuration has; a circuit closed with no failure is not kept).
///
/// Opening and closing are logged (the host escaped: a browser's push service is named by its
/// subscription), and ``GatewayMetrics`` counts the hosts backed off per app and platform.
final class HostCircuits: Sendable {
    /// Whose circuit.
    struct Key: Sendable, Hashable {
        var app: String
        var platform: DevicePlatform
        /// The push service's host and port, as ``PushHost`` writes it.
        var host: String
    }

    /// An app's devices of one platform, for counting their hosts backed off.
    struct AppPlatform: Sendable, Hashable {
        var app: String
        var platform: DevicePlatform
    }

    let settings: HostCircuit.Settings
    private let circuits = Mutex<[Key: HostCircuit]>([:])
    /// How many circuits are kept: with none, an answer needs no lock.
    private let kept = Atomic<Int>(0)
    private let logger: Logger
    private let metrics: GatewayMetrics?
    private let random: @Sendable () -> Double
    /// Told of each circuit that closes: its host answers again.
    private let closed: @Sendable (Key) -> Void
    private let lastForget = Mutex(ContinuousClock.now)
    /// How often the circuits of apps gone from the configuration are looked for.
    static let forgetInterval: Duration = .seconds(10)

    /// - Parameter closed: told of each circuit that closes (the workers make the devices held
    ///   for its host due at once).
    init(
        settings: HostCircuit.Settings = .standard, logger: Logger, metrics: GatewayMetrics?,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, closed: @escaping @Sendable (Key) -> Void = { _ in }
    ) {
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.random = random
        self.closed = closed
    }

    /// What to do with devices that come for `key`'s host at `now`.
    func admit(_ key: Key, now: Date = Date()) -> HostCircuit.Admission {
        guard kept.load(ordering: .relaxed) > 0 else { return .send }
        let draw = random()
        let admission = circuits.withLock { circuits in
            guard circuits[key] != nil else { return HostCircuit.Admission.send }
            return circuits[key]!.admit(now: now, random: draw)
        }
        if admission == .probe { metrics?.recordHostProbe(app: key.app, platform: key.platform) }
        return admission
    }

    /// For devices of a send already under way (``HostCircuit/admitRest(now:random:)``).
    func admitRest(_ key: Key, now: Date = Date()) -> HostCircuit.Admission {
        let draw = random()
        return circuits.withLock { $0[key]?.admitRest(now: now, random: draw) } ?? .send
    }

    /// Whether `key`'s host is backed off now (a send under way stops taking devices for it).
    func isBackedOff(_ key: Key) -> Bool {
        guard kept.load(ordering: .relaxed) > 0 else { return false }
        return circuits.withLock { $0[key]?.isBackedOff ?? false }
    }

    /// Takes in what a device's outcome says about `key`'s host; `probe`: it was the probe;
    /// `sentAt`: when its send began.
    func record(_ signal: HostSignal, for key: Key, probe: Bool = false, sentAt: Date? = nil, now: Date = Date()) {
        if case .answered = signal, kept.load(ordering: .relaxed) == 0 { return }
        let draw = random()
        let (transition, backedOff) = circuits.withLock { circuits -> (HostCircuit.Transition?, [AppPlatform: Int]?) in
            if circuits[key] == nil {
                guard case .failed = signal, makeRoom(for: key, in: &circuits) else { return (nil, nil) }
                circuits[key] = HostCircuit(settings: settings)
                kept.add(1, ordering: .relaxed)
            }
            let transition = circuits[key]!.record(signal, probe: probe, now: now, random: draw, sentAt: sentAt)
            if circuits[key]!.isIdle {
                circuits[key] = nil
                kept.subtract(1, ordering: .relaxed)
            }
            return (transition, transition == nil ? nil : Self.backedOff(circuits))
        }
        guard let transition else { return }
        report(transition, key: key, now: now)
        if case .closed = transition { closed(key) }
        if let backedOff { metrics?.recordHostsBackedOff(backedOff) }
    }

    /// The probe for `key` came back without a verdict (``HostCircuit/probeEnded(now:random:)``).
    func probeEnded(_ key: Key, now: Date = Date()) {
        let draw = random()
        circuits.withLock { $0[key]?.probeEnded(now: now, random: draw) }
    }

    /// Forgets the circuits of apps for which `exists` is false (gone from the configuration),
    /// at most once per ``forgetInterval`` (it is asked for each batch).
    func forgetGoneApps(_ exists: (String) -> Bool, now: ContinuousClock.Instant = .now) {
        guard kept.load(ordering: .relaxed) > 0 else { return }
        let due = lastForget.withLock { last in
            guard now - last >= Self.forgetInterval else { return false }
            last = now
            return true
        }
        guard due else { return }
        let backedOff = circuits.withLock { circuits -> [AppPlatform: Int]? in
            let gone = circuits.keys.filter { !exists($0.app) }
            guard !gone.isEmpty else { return nil }
            for key in gone { circuits[key] = nil }
            kept.subtract(gone.count, ordering: .relaxed)
            return Self.backedOff(circuits)
        }
        if let backedOff { metrics?.recordHostsBackedOff(backedOff) }
    }

    /// Every circuit kept, by key (for tests and diagnostics).
    var snapshot: [Key: HostCircuit] { circuits.withLock { $0 } }

    /// Room for a circuit of `key`'s app and platform: a closed one of theirs with the fewest
    /// failures goes when they have ``HostCircuit/Settings/maximumHostsPerApp``; `false` when
    /// all of those are backed off (the new host is then sent to as if closed).
    private func makeRoom(for key: Key, in circuits: inout [Key: HostCircuit]) -> Bool {
        let theirs = circuits.filter { $0.key.app == key.app && $0.key.platform == key.platform }
        guard theirs.count >= settings.maximumHostsPerApp else { return true }
        let closed = theirs.compactMap { entry -> (Key, Int)? in
            guard case .closed(let failures) = entry.value.state else { return nil }
            return (entry.key, failures)
        }
        guard let evicted = closed.min(by: { $0.1 < $1.1 }) else { return false }
        circuits[evicted.0] = nil
        kept.subtract(1, ordering: .relaxed)
        return true
    }

    /// The hosts backed off, by app and platform (those with none left out).
    private static func backedOff(_ circuits: [Key: HostCircuit]) -> [AppPlatform: Int] {
        var counts: [AppPlatform: Int] = [:]
        for (key, circuit) in circuits where circuit.isBackedOff { counts[AppPlatform(app: key.app, platform: key.platform), default: 0] += 1 }
        return counts
    }

    private func report(_ transition: HostCircuit.Transition, key: Key, now: Date) {
        var metadata: Logger.Metadata = ["app": "\(key.app)", "platform": "\(key.platform.rawValue)", "host": "\(PeerText(key.host, limit: 128))"]
        switch transition {
        case .opened(let until):
            metadata["failures"] = "\(settings.failureThreshold)"
            metadata["probeInSeconds"] = "\(Self.seconds(until.timeIntervalSince(now)))"
            logger.warning("push service host backed off: it keeps failing; its devices wait, one probe at a time", metadata: metadata)
            metrics?.recordHostOpened(app: key.app, platform: key.platform)
        case .probeFailed(let until, let failedProbes):
            metadata["failedProbes"] = "\(failedProbes)"
            metadata["probeInSeconds"] = "\(Self.seconds(until.timeIntervalSince(now)))"
            logger.debug("push service host still failing; backed off again", metadata: metadata)
        case .closed(let since, let failedProbes):
            metadata["backedOffSeconds"] = "\(Self.seconds(now.timeIntervalSince(since)))"
            metadata["failedProbes"] = "\(failedProbes)"
            logger.info("push service host answers again; sending to it", metadata: metadata)
        }
    }

    /// Seconds to one decimal place.
    private static func seconds(_ interval: TimeInterval) -> String {
        let tenths = Int((max(0, interval) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
