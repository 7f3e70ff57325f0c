import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether one push service's host is sent to, for one app and platform: a circuit breaker, as a
/// plain value that ``HostCircuits`` keeps and the workers consult before sending.
///
/// Closed, everything is sent. ``Settings/failureThreshold`` host failures in a row (5xx, no
/// answer, connections lost: ``HostSignal``) open it: nothing is sent until its probe time, when
/// one device goes through as a probe while the rest wait. The probe's answer closes it, or opens
/// it again for twice as long (``Settings/probeBackoff``: 1 s, doubling to 60 s, less up to 20 %
/// at random so the apps of a host that failed together do not probe together). A push service's
/// `Retry-After` with a failure puts the probe off until then, never sooner. Any answer from the
/// host (an acceptance, or a refusal about a device) closes it.
struct HostCircuit: Sendable, Hashable {
    /// When a circuit opens and how it probes.
    struct Settings: Sendable, Hashable {
        /// Host failures in a row that open a closed circuit.
        var failureThreshold = 10
        /// The wait before each probe: after the opening, then after each probe that failed.
        var probeBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0.2)
        /// A probe without a verdict for this long (its send never came back) no longer holds the
        /// host: the next device to come is a probe.
        var probeTimeout: Duration = .seconds(120)
        /// How long the batch a probe came in waits for its answer before it goes on without it
        /// (the probe's device then waits with the others; the probe's answer still decides, and
        /// a late acceptance makes them due at once): a host that answers again answers a probe
        /// within it, and one still failing holds no worker for longer.
        var probeWait: Duration = .milliseconds(250)
        /// How long the devices held while their host is backed off wait, but one of each batch
        /// held, which comes back for the next probe: unless the host answers first, when its
        /// circuit closing makes them all due at once (``HostCircuits``' `closed`). Not to be
        /// claimed and held again at every probe, however many an outage holds.
        var heldFor: Duration = .seconds(600)
        /// The longest a push service's `Retry-After` puts a probe off (its clients cut it to a
        /// minute already; this bounds what any outcome says).
        var longestRetryAfter: Duration = .seconds(3600)
        /// The most hosts ``HostCircuits`` keeps a circuit for, per app and platform (a Web Push
        /// app's browsers use a handful of push services; an APNs app, two hosts).
        var maximumHostsPerApp = 32

        /// The defaults above.
        static let standard = Settings()
    }

    enum State: Sendable, Hashable {
        /// Sending; `failures`: host failures since the last answer.
        case closed(failures: Int)
        /// Nothing is sent until `until`, then one probe. `failedProbes`: since it opened.
        case open(since: Date, until: Date, failedProbes: Int)
        /// A probe went at `probeSent`; nothing else is sent until it has its verdict.
        case probing(since: Date, probeSent: Date, failedProbes: Int)
    }

    /// What to do with the devices that come for the host.
    enum Admission: Sendable, Hashable {
        /// Send them.
        case send
        /// Send one of them, alone, as the probe; hold the rest until the probe's verdict is in
        /// (``HostCircuits/record(_:for:probe:now:)``), then send them or hold them
        /// (``HostCircuit/admitRest(now:random:)``).
        case probe
        /// Send none: they are due again at `until`, when the host is next tried.
        case hold(until: Date)

        /// When held devices are due (`nil`: they are sent).
        var holdUntil: Date? {
            if case .hold(let until) = self { return until }
            return nil
        }
    }

    /// A change the operator is told of.
    enum Transition: Sendable, Hashable {
        /// It opened: the host is backed off until `until`.
        case opened(until: Date)
        /// A probe failed: backed off again, until `until`.
        case probeFailed(until: Date, failedProbes: Int)
        /// It closed after being open since `since`.
        case closed(openSince: Date, failedProbes: Int)
    }

    let settings: Settings
    private(set) var state: State = .closed(failures: 0)
    /// How long the last probe that failed took to fail, or before the first, the send whose
    /// failure opened the circuit (APNs's client tries a notification up to five times before it
    /// reports the failure): devices that come while a probe is out are held for at least that
    /// long, not claimed again and again before its verdict.
    private(set) var lastProbeDuration: TimeInterval = 0

    init(settings: Settings = .standard) {
        self.settings = settings
    }

    /// Closed with no failure counted: the same as no circuit at all.
    var isIdle: Bool { state == .closed(failures: 0) }

    /// Whether devices are held (open or probing).
    var isBackedOff: Bool {
        if case .closed = state { return false }
        return true
    }

    /// What to do with devices that come for the host at `now`; a probe is handed out once.
    /// `random` (in 0..<1) draws the jitter of a hold while a probe is out.
    mutating func admit(now: Date, random: Double) -> Admission {
        switch state {
        case .closed:
            return .send
        case .open(let since, let until, let failedProbes):
            guard now >= until else { return .hold(until: until) }
            state = .probing(since: since, probeSent: now, failedProbes: failedProbes)
            return .probe
        case .probing(let since, let probeSent, let failedProbes):
            if now.timeIntervalSince(probeSent) >= settings.probeTimeout.seconds {
                state = .probing(since: since, probeSent: now, failedProbes: failedProbes)
                return .probe
            }
            return .hold(until: afterProbe(sent: probeSent, failedProbes: failedProbes, now: now, random: random))
        }
    }

    /// For devices of a send already under way (the rest of a probe's, once its verdict is in;
    /// those a send stopped taking): send them if the circuit is closed, else hold them until the
    /// next probe. Never hands out a probe.
    func admitRest(now: Date, random: Double) -> Admission {
        switch state {
        case .closed: .send
        case .open(_, let until, _): .hold(until: max(until, now))
        case .probing(_, let probeSent, let failedProbes): .hold(until: afterProbe(sent: probeSent, failedProbes: failedProbes, now: now, random: random))
        }
    }

    /// Takes in how a device sent to the host ended. `probe`: it was the probe; `sentAt`: when
    /// its send began, if known (how long a failure takes to come is how long a probe will).
    /// Returns the change, if the circuit opened or closed (or a probe failed).
    mutating func record(_ signal: HostSignal, probe: Bool, now: Date, random: Double, sentAt: Date? = nil) -> Transition? {
        switch (signal, state) {
        case (.answered, .closed):
            state = .closed(failures: 0)
            return nil
        case (.answered, .open(let since, _, let failedProbes)), (.answered, .probing(let since, _, let failedProbes)):
            // The host answered: a probe, or a send from before it opened that was still out.
            state = .closed(failures: 0)
            return .closed(openSince: since, failedProbes: failedProbes)
        case (.failed(let notBefore), .closed(let failures)):
            guard failures + 1 >= settings.failureThreshold else {
                state = .closed(failures: failures + 1)
                return nil
            }
            let until = later(now.addingTimeInterval(delay(afterFailedProbes: 0, random: random)), notBefore, now: now)
            state = .open(since: now, until: until, failedProbes: 0)
            if let sentAt { lastProbeDuration = min(max(0, now.timeIntervalSince(sentAt)), settings.probeTimeout.seconds) }
            return .opened(until: until)
        case (.failed(let notBefore), .open(let since, let until, let failedProbes)):
            // A send from before it opened: it only puts the probe off, if it says to.
            state = .open(since: since, until: later(until, notBefore, now: now), failedProbes: failedProbes)
            return nil
        case (.failed(let notBefore), .probing(let since, let probeSent, let failedProbes)):
            guard probe else {
                // Not the probe's verdict: a send from before it opened.
                return nil
            }
            lastProbeDuration = min(max(0, now.timeIntervalSince(probeSent)), settings.probeTimeout.seconds)
            let failed = failedProbes + 1
            let until = later(now.addingTimeInterval(delay(afterFailedProbes: failed, random: random)), notBefore, now: now)
            state = .open(since: since, until: until, failedProbes: failed)
            return .probeFailed(until: until, failedProbes: failed)
        }
    }

    /// The probe's send returned with no verdict (its device was refused before sending, the
    /// host limited that device's rate, the process is stopping): the circuit is open again for
    /// as long as before, and the device after that probes.
    mutating func probeEnded(now: Date, random: Double) {
        guard case .probing(let since, _, let failedProbes) = state else { return }
        state = .open(since: since, until: now.addingTimeInterval(delay(afterFailedProbes: failedProbes, random: random)), failedProbes: failedProbes)
    }

    /// When the probe after the one sent at `probeSent` would go, were that one to fail as the
    /// last one did: its wait after the last one's time to fail, and never before `now` and the wait.
    private func afterProbe(sent probeSent: Date, failedProbes: Int, now: Date, random: Double) -> Date {
        let wait = delay(afterFailedProbes: failedProbes + 1, random: random)
        return max(now, probeSent.addingTimeInterval(lastProbeDuration)).addingTimeInterval(wait)
    }

    /// The wait after `failedProbes` failed probes (0: after opening).
    private func delay(afterFailedProbes failedProbes: Int, random: Double) -> TimeInterval {
        settings.probeBackoff.delay(afterAttempt: failedProbes + 1, random: random).seconds
    }

    /// `time`, or the push service's `notBefore` if later (at most ``Settings/longestRetryAfter`` from now).
    private func later(_ time: Date, _ notBefore: Date?, now: Date) -> Date {
        guard let notBefore else { return time }
        return max(time, min(notBefore, now.addingTimeInterval(settings.longestRetryAfter.seconds)))
    }
}
