import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// A retry that names its time (a push service's `Retry-After`, a host the gateway backs off)
/// comes due then, not after the queue's back-off: as a decision, and on both databases.
@Suite("Retries with a time of their own")
struct RetryNotBeforeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let deadline = now.addingTimeInterval(3600)
    /// The store's defaults: 5 s, doubling up to 10 minutes, no jitter.
    static let settings = RetrySettings(HeraldStore.Configuration(url: .sqlite(path: ":memory:")))

    func decide(_ outcome: DeliveryOutcome.Result, attempt: Int = 1, deadline: Date = Self.deadline, cancelled: Bool = false) -> DeliveryDecision {
        DeliveryDecision.decide(
            outcome: outcome, attempt: attempt, deadline: deadline, cancelled: cancelled, now: Self.now, settings: Self.settings, random: 0.5
        )
    }

    @Test("the time replaces the back-off, whatever the attempt: sooner than it or later")
    func replacesBackoff() {
        let reason: DeliveryReason = "HostBackedOff"
        for attempt in [1, 3, 12] {
            #expect(decide(.retry(reason: reason, notBefore: Self.now.addingTimeInterval(2)), attempt: attempt) == .retry(at: Self.now.addingTimeInterval(2), reason: reason))
            #expect(decide(.retry(reason: reason, notBefore: Self.now.addingTimeInterval(900)), attempt: attempt) == .retry(at: Self.now.addingTimeInterval(900), reason: reason))
        }
        // Without one: the back-off (5 s after the first attempt).
        #expect(decide(.retry(reason: reason)) == .retry(at: Self.now.addingTimeInterval(5), reason: reason))
    }

    @Test("a time already past is now; one at or after the deadline fails with the reason; a cancel still fails it")
    func bounds() {
        let reason: DeliveryReason = "ServiceUnavailable"
        #expect(decide(.retry(reason: reason, notBefore: Self.now.addingTimeInterval(-30))) == .retry(at: Self.now, reason: reason))
        #expect(decide(.retry(reason: reason, notBefore: Self.deadline)) == .fail(reason: .expiredRetrying(last: reason)))
        #expect(decide(.retry(reason: reason, notBefore: Self.deadline.addingTimeInterval(60))) == .fail(reason: .expiredRetrying(last: reason)))
        #expect(decide(.retry(reason: reason, notBefore: Self.now.addingTimeInterval(2)), cancelled: true) == .fail(reason: .gateway(.cancelled)))
    }

    @Test("a device held with a time is claimed then, not before and not after the back-off: a listed device and a broadcast's", arguments: Backend.allCases)
    func claimedThen(backend: Backend) async throws {
        try await withStore(backend) { store in
            let t0 = Date()
            for number in 0..<6 { try await store.register(try registration(number), app: app, now: t0) }
            // A listed device, on its third attempt (back-off 20 s), held for 2 s.
            let (listed, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload), now: t0)
            var batch = try #require(try await store.claim(owner: "w", includeRanges: false, now: t0).first)
            try await store.complete(batch, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "ServiceUnavailable"))], now: t0)
            batch = try #require(try await store.claim(owner: "w", includeRanges: false, now: t0.addingTimeInterval(5)).first)
            #expect(batch.items.first?.attempt == 2)
            let held = t0.addingTimeInterval(7)
            try await store.complete(batch, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "HostBackedOff", notBefore: held))], now: t0.addingTimeInterval(5))
            #expect(try await store.claim(owner: "w", includeRanges: false, now: held.addingTimeInterval(-0.01)).isEmpty, "not before its time")
            batch = try #require(try await store.claim(owner: "w", includeRanges: false, now: held).first, "at its time, not after a 10 s back-off")
            #expect(batch.notification.id == listed.id && batch.items.map(\.token) == [token(1)] && batch.items.first?.attempt == 3)
            try await acceptAll(store, batch, now: held)
            #expect(try await store.notification(id: listed.id)?.counts.failed == 0)

            // A broadcast's devices, held from its range: each gets a row due at its time.
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: t0)
            let heldUntil = t0.addingTimeInterval(40)
            for batch in try await claimAll(store, now: t0) {
                try await store.complete(batch, outcomes: batch.items.map { item in
                    DeliveryOutcome(token: item.token, result: item.token == token(0) ? .accepted(receipt: nil) : .retry(reason: "HostBackedOff", notBefore: heldUntil))
                }, now: t0)
            }
            let waiting = try #require(try await store.notification(id: broadcast.id))
            #expect(waiting.status == .sending && waiting.counts.pending == 5 && waiting.counts.failed == 0, "\(waiting.counts)")
            #expect(try await claimAll(store, now: heldUntil.addingTimeInterval(-0.01)).isEmpty, "not at the 5 s back-off, nor before its time")
            let due = try await claimAll(store, now: heldUntil)
            #expect(Set(due.flatMap { $0.items.map(\.token) }) == Set((1..<6).map(token)))
            for batch in due { try await acceptAll(store, batch, now: heldUntil) }
            let done = try #require(try await store.notification(id: broadcast.id))
            #expect(done.status == .done && done.counts.accepted == 6 && done.counts.failed == 0)
        }
    }

    @Test("held deliveries are woken: those of the app's platform held for the reason come due now, no others", arguments: Backend.allCases)
    func wake(backend: Backend) async throws {
        try await withStore(backend) { store in
            let t0 = Date()
            for number in 0..<8 { try await store.register(try registration(number), app: app, now: t0) }
            for number in 0..<2 { try await store.register(try registration(number), app: "other", now: t0) }
            let later = t0.addingTimeInterval(600)
            // Devices 0-3 held until later, 4-5 held for another reason, 6-7 accepted.
            let (mine, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: t0)
            for batch in try await claimAll(store, now: t0) {
                try await store.complete(batch, outcomes: batch.items.map { item in
                    let number = Int(item.token, radix: 16) ?? 0
                    let result: DeliveryOutcome.Result =
                        number < 4 ? .retry(reason: "HostBackedOff", notBefore: later) : number < 6 ? .retry(reason: "TooManyRequests", notBefore: later) : .accepted(receipt: nil)
                    return DeliveryOutcome(token: item.token, result: result)
                }, now: t0)
            }
            // Another app's, held the same way.
            let (theirs, _) = try await store.enqueue(NotificationRequest(app: "other", audience: .all, payload: payload), now: t0)
            for batch in try await claimAll(store, now: t0) {
                try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: "HostBackedOff", notBefore: later)) }, now: t0)
            }
            #expect(try await claimAll(store, now: t0.addingTimeInterval(1)).isEmpty)

            #expect(try await store.wakeHeld(app: app, platform: .webpush, reason: .gateway(.hostBackedOff), now: t0.addingTimeInterval(1)) == 0, "no browser held")
            #expect(try await store.wakeHeld(app: app, platform: .apns, reason: .gateway(.hostBackedOff), now: t0.addingTimeInterval(1)) == 4)
            let woken = try await claimAll(store, now: t0.addingTimeInterval(1))
            #expect(woken.map(\.notification.id) == [mine.id] && Set(woken.flatMap { $0.items.map(\.token) }) == Set((0..<4).map(token)))
            for batch in woken { try await acceptAll(store, batch, now: t0.addingTimeInterval(1)) }
            #expect(try await store.wakeHeld(app: app, platform: .apns, reason: .gateway(.hostBackedOff), now: t0.addingTimeInterval(2)) == 0, "none left")
            let (rest, notYet) = (try await store.notification(id: mine.id), try await store.notification(id: theirs.id))
            #expect(rest?.counts.pending == 2 && rest?.counts.accepted == 6 && notYet?.counts.pending == 2)
        }
    }
}
