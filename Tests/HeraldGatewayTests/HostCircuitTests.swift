import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldGateway

/// A push service's host that keeps failing is backed off, per app and platform: the circuit as a
/// plain value, its bounded table, and the step that holds a part's devices for it.
@Suite("Host circuits")
struct HostCircuitTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let failure = HostSignal.failed(notBefore: nil)
    /// No jitter: each wait is the back-off's exact one.
    static let exact = HostCircuit.Settings(probeBackoff: Backoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0.2))

    /// A circuit opened at `t0` (N failures in a row there).
    static func opened(settings: HostCircuit.Settings = exact) -> HostCircuit {
        var circuit = HostCircuit(settings: settings)
        for _ in 0..<settings.failureThreshold { _ = circuit.record(failure, probe: false, now: t0, random: 0) }
        return circuit
    }

    // MARK: The circuit

    @Test("it opens after N host failures in a row, not N-1; an answer between starts the count again")
    func opensAfterN() {
        var circuit = HostCircuit(settings: Self.exact)
        #expect(circuit.settings.failureThreshold == 10)
        for _ in 0..<9 { #expect(circuit.record(Self.failure, probe: false, now: Self.t0, random: 0) == nil) }
        #expect(circuit.admit(now: Self.t0, random: 0) == .send)
        #expect(circuit.record(.answered, probe: false, now: Self.t0, random: 0) == nil)
        for _ in 0..<9 { _ = circuit.record(Self.failure, probe: false, now: Self.t0, random: 0) }
        #expect(circuit.admit(now: Self.t0, random: 0) == .send, "9 since the answer")
        #expect(circuit.record(Self.failure, probe: false, now: Self.t0, random: 0) == .opened(until: Self.t0.addingTimeInterval(1)))
        #expect(circuit.admit(now: Self.t0, random: 0) == .hold(until: Self.t0.addingTimeInterval(1)))
        #expect(circuit.isBackedOff)
    }

    @Test("one probe at a time: at the probe time one send probes, the others are held until the probe after it")
    func oneProbe() {
        var circuit = Self.opened()
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(0.5), random: 0) == .hold(until: Self.t0.addingTimeInterval(1)))
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        for offset in [1.0, 1.5, 30] {
            #expect(circuit.admit(now: Self.t0.addingTimeInterval(offset), random: 0) == .hold(until: Self.t0.addingTimeInterval(offset + 2)))
        }
        #expect(circuit.admitRest(now: Self.t0.addingTimeInterval(2), random: 0) == .hold(until: Self.t0.addingTimeInterval(4)), "never a probe")
        // A probe never heard of again no longer holds the host.
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1 + 120), random: 0) == .probe)
    }

    @Test("while a probe is out, devices are held until after the time the last probe took to fail, not claimed again before its verdict")
    func slowProbes() {
        var circuit = Self.opened()
        // The first probe takes 12 s to fail (the client's own retries): the next goes 2 s after.
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        #expect(circuit.record(Self.failure, probe: true, now: Self.t0.addingTimeInterval(13), random: 0) == .probeFailed(until: Self.t0.addingTimeInterval(15), failedProbes: 1))
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(15), random: 0) == .probe)
        // A device 1 s into it waits for its 12 s, then the 4 s after a second failure.
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(16), random: 0) == .hold(until: Self.t0.addingTimeInterval(15 + 12 + 4)))
        #expect(circuit.admitRest(now: Self.t0.addingTimeInterval(40), random: 0) == .hold(until: Self.t0.addingTimeInterval(44)), "late: the wait from now")

        // Before the first probe's verdict, the send whose failures opened it says how long a failure takes.
        var fresh = HostCircuit(settings: Self.exact)
        for _ in 0..<10 { _ = fresh.record(Self.failure, probe: false, now: Self.t0, random: 0, sentAt: Self.t0.addingTimeInterval(-13)) }
        #expect(fresh.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        #expect(fresh.admit(now: Self.t0.addingTimeInterval(1.5), random: 0) == .hold(until: Self.t0.addingTimeInterval(1 + 13 + 2)))
    }

    @Test("each failed probe doubles the wait, from 1 s to at most 60 s; jitter only shortens it, by up to 20 %")
    func growingIntervals() {
        var circuit = Self.opened()
        var now = Self.t0.addingTimeInterval(1)
        var waits: [Double] = []
        for _ in 0..<9 {
            #expect(circuit.admit(now: now, random: 0) == .probe)
            guard case .probeFailed(let until, _)? = circuit.record(Self.failure, probe: true, now: now, random: 0) else {
                Issue.record("the probe's failure opens it again")
                return
            }
            waits.append(until.timeIntervalSince(now))
            now = until
        }
        #expect(waits == [2, 4, 8, 16, 32, 60, 60, 60, 60])
        var jittered = Self.opened()
        #expect(jittered.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        guard case .probeFailed(let until, _)? = jittered.record(Self.failure, probe: true, now: Self.t0.addingTimeInterval(1), random: 0.999_999) else {
            Issue.record("the probe's failure opens it again")
            return
        }
        let wait = until.timeIntervalSince(Self.t0.addingTimeInterval(1))
        #expect(wait >= 1.6 && wait < 2)
    }

    @Test("Retry-After puts the probe off until then, never sooner; a shorter one leaves the back-off; an absurd one is cut to an hour")
    func retryAfter() {
        var circuit = HostCircuit(settings: Self.exact)
        for _ in 0..<9 { _ = circuit.record(Self.failure, probe: false, now: Self.t0, random: 0) }
        let asked = Self.t0.addingTimeInterval(30)
        #expect(circuit.record(.failed(notBefore: asked), probe: false, now: Self.t0, random: 0) == .opened(until: asked))
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(29.9), random: 0) == .hold(until: asked))
        #expect(circuit.admit(now: asked, random: 0) == .probe)
        // The probe fails asking for 0.5 s: the back-off's 2 s stand.
        let probed = asked
        #expect(circuit.record(.failed(notBefore: probed.addingTimeInterval(0.5)), probe: true, now: probed, random: 0)
            == .probeFailed(until: probed.addingTimeInterval(2), failedProbes: 1))
        // A send from before it opened asks for longer: the probe waits for it.
        _ = circuit.record(.failed(notBefore: probed.addingTimeInterval(45)), probe: false, now: probed, random: 0)
        #expect(circuit.admit(now: probed.addingTimeInterval(10), random: 0) == .hold(until: probed.addingTimeInterval(45)))
        // A week is cut to an hour.
        var absurd = HostCircuit(settings: Self.exact)
        for _ in 0..<9 { _ = absurd.record(Self.failure, probe: false, now: Self.t0, random: 0) }
        #expect(absurd.record(.failed(notBefore: Self.t0.addingTimeInterval(7 * 86_400)), probe: false, now: Self.t0, random: 0)
            == .opened(until: Self.t0.addingTimeInterval(3600)))
    }

    @Test("an answer closes it: the probe's, or a send's from before it opened; a failure that is not the probe's is no verdict")
    func closes() {
        var circuit = Self.opened()
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        #expect(circuit.record(Self.failure, probe: false, now: Self.t0.addingTimeInterval(1), random: 0) == nil, "not the probe's")
        #expect(circuit.isBackedOff)
        #expect(circuit.record(.answered, probe: true, now: Self.t0.addingTimeInterval(3), random: 0) == .closed(openSince: Self.t0, failedProbes: 0))
        #expect(circuit.isIdle && circuit.admit(now: Self.t0.addingTimeInterval(3), random: 0) == .send)

        var late = Self.opened()
        #expect(late.record(.answered, probe: false, now: Self.t0.addingTimeInterval(0.2), random: 0) == .closed(openSince: Self.t0, failedProbes: 0))
        #expect(late.admit(now: Self.t0.addingTimeInterval(0.3), random: 0) == .send)
    }

    @Test("a probe without a verdict opens it again for as long as before, not longer")
    func probeWithoutVerdict() {
        var circuit = Self.opened()
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1), random: 0) == .probe)
        circuit.probeEnded(now: Self.t0.addingTimeInterval(1), random: 0)
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(1.5), random: 0) == .hold(until: Self.t0.addingTimeInterval(2)))
        #expect(circuit.admit(now: Self.t0.addingTimeInterval(2), random: 0) == .probe)
    }

    @Test("what an outcome says about its host: 5xx, no answer and lost connections are failures; a 4xx about a device is an answer; the rest nothing")
    func signals() {
        let later = Self.t0.addingTimeInterval(9)
        let failures: [DeliveryOutcome.Result] = [
            .retry(reason: .apns(.serviceUnavailable)), .retry(reason: .apns(.internalServerError)), .retry(reason: .apns(.shutdown)),
            .retry(reason: .webPush(.serviceUnavailable)), .retry(reason: .webPush(.internalServerError)), .retry(reason: .fcm(.unavailable)),
            .retry(reason: .fcm(.internalError)), .retry(reason: .hms(.unavailable)), .retry(reason: .hms(.internalError)),
            .retry(reason: .gateway(.connectionFailed)), .retry(reason: .gateway(.connectionLost)), .retry(reason: .gateway(.timedOut)),
        ]
        for result in failures { #expect(HostSignal(result) == .failed(notBefore: nil), "\(result)") }
        #expect(HostSignal(.retry(reason: .webPush(.serviceUnavailable), notBefore: later)) == .failed(notBefore: later))
        let answers: [DeliveryOutcome.Result] = [
            .accepted(receipt: nil), .rejected(reason: .apns(.badDeviceToken), timestamp: nil), .rejected(reason: .apns(.unregistered), timestamp: Self.t0),
            .rejected(reason: .webPush(.subscriptionGone), timestamp: Self.t0), .rejected(reason: .fcm(.unregistered), timestamp: nil),
            .rejected(reason: .hms(.invalidToken), timestamp: nil),
        ]
        for result in answers { #expect(HostSignal(result) == .answered, "\(result)") }
        let nothing: [DeliveryOutcome.Result] = [
            .retry(reason: .apns(.tooManyRequests)), .retry(reason: .fcm(.quotaExceeded)), .retry(reason: .apns(.invalidProviderToken)),
            .retry(reason: .webPush(.badJwtToken)), .retry(reason: .fcm(.senderRefused)), .retry(reason: .gateway(.tlsFailed)),
            .retry(reason: .gateway(.shutdown)), .retry(reason: .gateway(.hostBackedOff)), .retry(reason: .gateway(.unknownApp)),
            .failed(reason: .gateway(.payloadInvalid)), .failed(reason: .gateway(.expired)), .failed(reason: .apns(.badTopic)),
        ]
        for result in nothing { #expect(HostSignal(result) == nil, "\(result)") }
    }

    // MARK: The table

    static func circuits(_ settings: HostCircuit.Settings = exact) -> HostCircuits {
        HostCircuits(settings: settings, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: nil, random: { 0 })
    }

    static func key(_ host: String, app: String = "shop", platform: DevicePlatform = .apns) -> HostCircuits.Key {
        HostCircuits.Key(app: app, platform: platform, host: host)
    }

    static func fail(_ circuits: HostCircuits, _ key: HostCircuits.Key, times: Int = 10, now: Date = t0) {
        for _ in 0..<times { circuits.record(failure, for: key, now: now) }
    }

    @Test("per app, platform and host: one host backed off leaves the app's others, another app's and another platform's alone")
    func perKey() {
        let circuits = Self.circuits()
        Self.fail(circuits, Self.key("a:443"))
        #expect(circuits.admit(Self.key("a:443"), now: Self.t0) == .hold(until: Self.t0.addingTimeInterval(1)))
        #expect(circuits.admit(Self.key("b:443"), now: Self.t0) == .send)
        #expect(circuits.admit(Self.key("a:443", app: "other"), now: Self.t0) == .send)
        #expect(circuits.admit(Self.key("a:443", platform: .webpush), now: Self.t0) == .send)
    }

    @Test("bounded: a closed circuit with no failure is not kept; at most the most hosts per app and platform; gone apps' circuits are forgotten")
    func bounds() {
        var settings = Self.exact
        settings.maximumHostsPerApp = 3
        let circuits = Self.circuits(settings)
        // Failures then an answer: nothing kept.
        Self.fail(circuits, Self.key("a:443"), times: 4)
        #expect(circuits.snapshot.count == 1)
        circuits.record(.answered, for: Self.key("a:443"), now: Self.t0)
        #expect(circuits.snapshot.isEmpty)
        // Opened, then closed by its probe's answer: not kept either.
        Self.fail(circuits, Self.key("a:443"))
        #expect(circuits.admit(Self.key("a:443"), now: Self.t0.addingTimeInterval(1)) == .probe)
        circuits.record(.answered, for: Self.key("a:443"), probe: true, now: Self.t0.addingTimeInterval(1))
        #expect(circuits.snapshot.isEmpty)

        // Three hosts open, a fourth and fifth failing: the app keeps three; the others are sent to.
        for host in ["h1", "h2", "h3", "h4", "h5"] { Self.fail(circuits, Self.key(host)) }
        #expect(circuits.snapshot.count == 3)
        #expect(circuits.admit(Self.key("h4"), now: Self.t0) == .send && circuits.admit(Self.key("h5"), now: Self.t0) == .send)
        // A host of theirs merely failing gives way to a new one when they are full.
        circuits.record(.answered, for: Self.key("h3"), now: Self.t0)
        Self.fail(circuits, Self.key("h3"), times: 2)
        Self.fail(circuits, Self.key("h6"))
        #expect(Set(circuits.snapshot.keys.map(\.host)) == ["h1", "h2", "h6"])
        // Another app and platform have room of their own.
        Self.fail(circuits, Self.key("h1", app: "other"))
        Self.fail(circuits, Self.key("h1", platform: .fcm))
        #expect(circuits.snapshot.count == 5)

        // An app gone from the configuration: its circuits go, the next time they are looked for.
        circuits.forgetGoneApps({ $0 == "other" }, now: .now + .seconds(11))
        #expect(circuits.snapshot.keys.map(\.app) == ["other"])
        circuits.forgetGoneApps({ _ in false }, now: .now + .seconds(12))
        #expect(circuits.snapshot.count == 1, "not again within 10 s")
        circuits.forgetGoneApps({ _ in false }, now: .now + .seconds(30))
        #expect(circuits.snapshot.isEmpty)
    }

    // MARK: Holding a part's devices

    /// A platform whose devices' hosts are their tokens' first letter; it answers each device with
    /// `answer`, one at a time, and stops taking them when its host is backed off, as APNs does.
    final class Scripted: PlatformDelivery {
        let answer: @Sendable (String) -> DeliveryOutcome.Result
        let sent = Mutex<[String]>([])
        init(answer: @escaping @Sendable (String) -> DeliveryOutcome.Result) {
            self.answer = answer
        }
        func hosts(of part: DeliveryPart) async -> PartHosts {
            PartHosts(eachOf: part.items.map { String($0.token.prefix(1)) })
        }
        func send(_ part: DeliveryPart) async {
            for (index, item) in part.items.enumerated() {
                if part.hostBackedOff() { return }
                sent.withLock { $0.append(item.token) }
                part.record(answer(item.token), at: index)
            }
        }
    }

    static func part(_ tokens: [String], store: HeraldStore) -> DeliveryPart {
        let batch = DeliverySeamTests.batch(tokens)
        return DeliveryPart(
            batch: batch, app: .init(id: "shop"), store: store, logger: Logger(label: "test"),
            outcomes: OutcomeCollector(tokens: tokens, missing: .retry(reason: .gateway(.shutdown))))
    }

    static func send(_ tokens: [String], through delivery: Scripted, circuits: HostCircuits, store: HeraldStore) async -> [DeliveryOutcome.Result] {
        let part = part(tokens, store: store)
        await HostIsolation(circuits: circuits, platform: .apns).send(part, through: delivery)
        part.outcomes.stop()
        return part.outcomes.take().map(\.result)
    }

    static func isHeld(_ result: DeliveryOutcome.Result) -> Bool {
        heldFor(result) != nil
    }

    /// How long from now a held device waits; `nil` when it is not held.
    static func heldFor(_ result: DeliveryOutcome.Result) -> TimeInterval? {
        guard case .retry(.gateway(.hostBackedOff), let notBefore?) = result, notBefore > Date() else { return nil }
        return notBefore.timeIntervalSinceNow
    }

    @Test("a part whose host fails: sending stops once the circuit opens, and the rest are held; a host backed off is not sent to; another host is")
    func holds() async throws {
        try await DeliverySeamTests.withStore { store in
            let circuits = Self.circuits(.standard)
            let down = Scripted(answer: { $0.hasPrefix("a") ? .retry(reason: .apns(.serviceUnavailable)) : .accepted(receipt: nil) })
            let tokens = (0..<50).map { "a\($0)" } + (0..<5).map { "b\($0)" }
            let first = await Self.send(tokens, through: down, circuits: circuits, store: store)
            #expect(down.sent.withLock { $0.filter { $0.hasPrefix("a") }.count } == 10, "stopped at the tenth failure")
            #expect(first[0..<9].allSatisfy { $0 == .retry(reason: .apns(.serviceUnavailable)) }, "after the queue's back-off")
            // The failure that opened it comes back for the first probe; of those not sent, one
            // does, and the others wait ten minutes, or until the host answers.
            guard case .retry(.apns(.serviceUnavailable), let probeTime?) = first[9] else {
                Issue.record("\(first[9])")
                return
            }
            #expect(probeTime > Date() && probeTime < Date().addingTimeInterval(1.1))
            #expect(Self.heldFor(first[10]).map { $0 <= 1.1 } == true, "\(first[10])")
            #expect(first[11..<50].allSatisfy { Self.heldFor($0).map { $0 > 590 && $0 <= 600 } == true }, "\(first[11])")
            #expect(first[50...].allSatisfy { $0 == .accepted(receipt: nil) }, "the other host's devices are sent")
            #expect(circuits.snapshot.count == 1)

            // The next part for the host, before its probe: nothing sent, every device held.
            let again = Scripted(answer: { _ in .accepted(receipt: nil) })
            let second = await Self.send((0..<20).map { "a\($0)" }, through: again, circuits: circuits, store: store)
            #expect(again.sent.withLock { $0 }.isEmpty && second.allSatisfy(Self.isHeld))
            #expect(second.filter { Self.heldFor($0)! < 2 }.count == 1, "one comes back for the probe")
        }
    }

    @Test("at the probe time one device is sent alone: if it fails the rest are held; if it is answered the rest are sent and the circuit closes")
    func probes() async throws {
        try await DeliverySeamTests.withStore { store in
            let circuits = Self.circuits(.standard)
            let key = Self.key("a")
            let past = Date().addingTimeInterval(-5)
            Self.fail(circuits, key, now: past)  // opened 5 s ago: its probe is due
            let down = Scripted(answer: { _ in .retry(reason: .gateway(.timedOut)) })
            let failed = await Self.send((0..<20).map { "a\($0)" }, through: down, circuits: circuits, store: store)
            #expect(down.sent.withLock { $0 } == ["a0"], "one probe")
            guard case .retry(.gateway(.timedOut), let again?) = failed[0] else {
                Issue.record("\(failed[0])")
                return
            }
            #expect(again > Date(), "the probe's device comes back for the next probe")
            #expect(failed[1...].allSatisfy(Self.isHeld))
            #expect(circuits.admit(key) != .probe, "the next probe waits")

            // Its wait over, the next probe is answered: the rest go at once.
            let backOn = HostCircuits.Key(app: "shop", platform: .apns, host: "b")
            Self.fail(circuits, backOn, now: past)
            let up = Scripted(answer: { _ in .accepted(receipt: nil) })
            let sent = await Self.send((0..<20).map { "b\($0)" }, through: up, circuits: circuits, store: store)
            #expect(up.sent.withLock { $0 } == (0..<20).map { "b\($0)" } && sent.allSatisfy { $0 == .accepted(receipt: nil) })
            #expect(circuits.admit(backOn) == .send && circuits.snapshot[backOn] == nil)
        }
    }

    /// Answers its first ten devices with a 503, then hangs until released, as a client still
    /// trying the rest again would.
    final class Hanging: PlatformDelivery {
        let release: AsyncStream<Void>
        init(release: AsyncStream<Void>) { self.release = release }
        func hosts(of part: DeliveryPart) async -> PartHosts { PartHosts(host: "a") }
        func send(_ part: DeliveryPart) async {
            for index in part.items.indices.prefix(10) { part.record(.retry(reason: .apns(.serviceUnavailable)), at: index) }
            for await _ in release {}
            for index in part.items.indices { part.record(.accepted(receipt: "late"), at: index) }
        }
    }

    @Test("a send still under way when its failures back the host off is left to end by itself: the batch goes on, the devices without an answer held")
    func leavesSlowSend() async throws {
        try await DeliverySeamTests.withStore { store in
            let (release, releasing) = AsyncStream<Void>.makeStream()
            defer { releasing.finish() }
            let part = Self.part((0..<30).map { "a\($0)" }, store: store)
            await HostIsolation(circuits: Self.circuits(.standard), platform: .apns).send(part, through: Hanging(release: release))
            part.outcomes.stop()
            let results = part.outcomes.take().map(\.result)
            #expect(results[0..<10].allSatisfy { if case .retry(.apns(.serviceUnavailable), _) = $0 { return true } else { return false } })
            #expect(results[10...].allSatisfy(Self.isHeld), "\(results[10])")
        }
    }

    @Test("a circuit that closes is told of, so the devices held for its host go at once")
    func closeIsTold() {
        let told = Mutex<[HostCircuits.Key]>([])
        let circuits = HostCircuits(
            settings: Self.exact, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: nil, random: { 0 },
            closed: { key in told.withLock { $0.append(key) } })
        Self.fail(circuits, Self.key("a"), times: 5)
        circuits.record(.answered, for: Self.key("a"), now: Self.t0)
        #expect(told.withLock { $0 }.isEmpty, "never opened: nothing was held")
        Self.fail(circuits, Self.key("a"))
        #expect(circuits.admit(Self.key("a"), now: Self.t0.addingTimeInterval(1)) == .probe)
        circuits.record(.answered, for: Self.key("a"), probe: true, now: Self.t0.addingTimeInterval(1))
        #expect(told.withLock { $0 } == [Self.key("a")])
    }
}
