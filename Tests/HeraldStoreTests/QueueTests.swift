import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The durable queue, on both backends: audiences, counts, idempotency, cancel, leases, retries,
/// badge increments, retention.
@Suite("Delivery queue", .timeLimit(.minutes(6)))
struct QueueTests {
    @Test("tokens, users, tags, all: each reaches exactly its active devices, and ends done with its counts", arguments: Backend.allCases)
    func audiences(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<300 {
                try await store.register(
                    try registration(number, user: .some("u\(number % 10)"), tags: number % 3 == 0 ? ["three"] : (number % 7 == 0 ? ["seven"] : [])), app: app
                )
            }
            // Device 0 is gone: never sent to, whatever the audience.
            _ = try await store.recordFeedback(app: app, [(token(0), Date().addingTimeInterval(60))])
            try await store.register(try registration(5000), app: "other")

            let cases: [(Audience, Set<String>)] = [
                (.tokens([token(0), token(1), token(9999)]), [token(1), token(9999)]),
                (.users(["u3", "u4"]), Set((0..<300).filter { $0 % 10 == 3 || $0 % 10 == 4 }.map(token))),
                (.tags(["three", "seven"]), Set((1..<300).filter { $0 % 3 == 0 || $0 % 7 == 0 }.map(token))),
                (.all, Set((1..<300).map(token))),
            ]
            for (audience, expected) in cases {
                let (queued, created) = try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload))
                #expect(created && queued.status == .queued)
                let sent = try await deliverAll(store, limit: 37)
                #expect(Set(sent) == expected, "\(audience)")
                #expect(sent.count == Set(sent).count, "\(audience): no device twice")
                let done = try #require(try await store.notification(id: queued.id))
                #expect(done.status == .done && done.finishedAt != nil, "\(audience)")
                #expect(done.counts.accepted == expected.count, "\(audience)")
                #expect(done.counts.targeted == expected.count + (audience == .tokens([token(0), token(1), token(9999)]) ? 1 : 0), "\(audience)")
                #expect(done.counts.pending == 0)
            }
        }
    }

    @Test("a token the store knows is gone is rejected at once with the reason on record, never sent", arguments: Backend.allCases)
    func knownGone(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1), app: app)
            _ = try await store.recordFeedback(app: app, [(token(1), Date().addingTimeInterval(60))])
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload))
            #expect(queued.status == .done)
            #expect(queued.counts.rejected == ["Unregistered": 1])
            #expect(try await store.claim(owner: "w").isEmpty)
            let rejected = try await store.deliveries(notificationID: queued.id, outcome: .rejected)
            #expect(rejected.items.map(\.token) == [token(1)])
        }
    }

    @Test("a broadcast keeps counts for accepted devices and rows for the others; rejections are listed by reason", arguments: Backend.allCases)
    func broadcastOutcomes(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<50 { try await store.register(try registration(number), app: app) }
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            #expect(queued.counts.targeted == 50)
            for batch in try await claimAll(store) {
                try await store.complete(batch, outcomes: batch.items.map { item in
                    let number = Int(item.token, radix: 16)!
                    return DeliveryOutcome(token: item.token, result: number < 3 ? .rejected(reason: "BadDeviceToken", timestamp: nil) : .accepted(receipt: "a"))
                })
            }
            let done = try #require(try await store.notification(id: queued.id))
            #expect(done.status == .done)
            #expect(done.counts.accepted == 47 && done.counts.rejected == ["BadDeviceToken": 3])
            #expect(try await store.deliveries(notificationID: queued.id, outcome: .accepted).items.isEmpty, "a broadcast keeps no row per acceptance")
            #expect(try await store.deliveries(notificationID: queued.id, outcome: .rejected).items.map(\.token) == (0..<3).map(token))
            #expect(try await store.countDevices(app: app, status: .invalid) == 3)
        }
    }

    @Test("the same idempotency key returns the notification stored the first time", arguments: Backend.allCases)
    func idempotency(backend: Backend) async throws {
        try await withStore(backend) { store in
            let request = NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload, idempotencyKey: "order-42")
            let (first, created) = try await store.enqueue(request)
            let (second, createdAgain) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload, idempotencyKey: "order-42"))
            #expect(created && !createdAgain)
            #expect(second.id == first.id && second.request.audience == .tokens([token(1)]))
            let (other, _) = try await store.enqueue(NotificationRequest(app: "other", audience: .all, payload: payload, idempotencyKey: "order-42"))
            #expect(other.id != first.id, "keys are per app")
        }
    }

    @Test("cancel stops what is unsent; what is in flight finishes; nothing more is claimed", arguments: Backend.allCases)
    func cancel(backend: Backend) async throws {
        try await withStore(backend) { store in
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<10).map(token)), payload: payload))
            let inFlight = try #require(try await store.claim(owner: "w", limit: 4).first)
            let cancelled = try #require(try await store.cancel(id: queued.id))
            #expect(cancelled.status == .cancelled && cancelled.counts.failed == 6)
            #expect(try await store.claim(owner: "w").isEmpty)
            try await acceptAll(store, inFlight)
            let after = try #require(try await store.notification(id: queued.id))
            #expect(after.status == .cancelled && after.counts.accepted == 4 && after.counts.failed == 6)
            #expect(try await store.cancel(id: "00000000-0000-7000-8000-000000000000") == nil)

            // A broadcast's unread ranges stop too.
            for number in 0..<100 { try await store.register(try registration(number), app: app) }
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            let stopped = try #require(try await store.cancel(id: broadcast.id))
            #expect(stopped.counts.failed == 100 && stopped.counts.pending == 0, "nothing in flight: every device not sent counts as failed")
            #expect(try await store.claim(owner: "w").isEmpty)
        }
    }

    @Test("a lease that runs out goes back to the queue: another worker gets exactly that work, marked as a re-send", arguments: Backend.allCases)
    func leaseExpiry(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            for number in 0..<40 { try await store.register(try registration(number), app: app, now: t0) }
            let (explicit, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2)]), payload: payload), now: t0)
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: t0)

            let killed = try await store.claim(owner: "killed", limit: 10, now: t0)
            #expect(killed.count == 1 && killed[0].notification.id == explicit.id && !killed[0].isResend)
            let killedRange = try await store.claim(owner: "killed", limit: 10, now: t0)
            #expect(killedRange.first?.notification.id == broadcast.id)
            // While the leases live, nobody else gets that work.
            let other = try await store.claim(owner: "other", limit: 10, now: t0.addingTimeInterval(10))
            #expect(Set(other.flatMap { $0.items.map(\.token) }).isDisjoint(with: Set((killed + killedRange).flatMap { $0.items.map(\.token) })))
            for batch in other { try await acceptAll(store, batch, now: t0.addingTimeInterval(10)) }

            // After: the same devices, to a new owner, flagged as re-sends.
            let taken = try await store.claim(owner: "survivor", limit: 10, now: t0.addingTimeInterval(31))
            #expect(taken.first?.notification.id == explicit.id && taken.first?.isResend == true)
            #expect(Set(taken.first?.items.map(\.token) ?? []) == [token(1), token(2)])
            let takenRange = try await store.claim(owner: "survivor", limit: 10, now: t0.addingTimeInterval(31))
            #expect(takenRange.first?.isResend == true)
            #expect(takenRange.first?.items.map(\.token) == killedRange.first?.items.map(\.token))

            // The killed worker's late completion changes nothing; the survivor's counts.
            try await acceptAll(store, killed[0], now: t0.addingTimeInterval(32))
            await #expect(throws: StoreError.self) { try await acceptAll(store, killedRange[0], now: t0.addingTimeInterval(32)) }
            try await acceptAll(store, taken[0], now: t0.addingTimeInterval(32))
            try await acceptAll(store, takenRange[0], now: t0.addingTimeInterval(32))
            try await deliverAll(store, now: t0.addingTimeInterval(33))
            #expect(try await store.notification(id: explicit.id)?.counts.accepted == 2)
            let finished = try #require(try await store.notification(id: broadcast.id))
            #expect(finished.status == .done && finished.counts.accepted == 40, "every device counted once: \(finished.counts)")
        }
    }

    @Test("one claim takes what a lost worker held before what is due, both within its limit", arguments: Backend.allCases)
    func expiredBeforeDue(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            for number in 0..<6 { try await store.register(try registration(number), app: app, now: t0) }
            let (held, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(0), token(1), token(2)]), payload: payload), now: t0)
            let killed = try await store.claim(owner: "killed", limit: 10, includeRanges: false, now: t0)
            #expect(killed.map(\.notification.id) == [held.id])
            // Queued while the lease lives, so due before it runs out.
            let (due, _) = try await store.enqueue(
                NotificationRequest(app: app, audience: .tokens([token(3), token(4), token(5)]), payload: payload), now: t0.addingTimeInterval(1))

            let first = try await store.claim(owner: "survivor", limit: 4, includeRanges: false, now: t0.addingTimeInterval(31))
            #expect(first.map(\.items.count).reduce(0, +) == 4, "the limit holds over both kinds")
            let resent = try #require(first.first { $0.notification.id == held.id })
            #expect(Set(resent.items.map(\.token)) == [token(0), token(1), token(2)] && resent.isResend, "every device whose lease ran out, first")
            #expect(first.first { $0.notification.id == due.id }?.items.count == 1)

            let rest = try await store.claim(owner: "survivor", limit: 10, includeRanges: false, now: t0.addingTimeInterval(31))
            #expect(rest.map(\.notification.id) == [due.id] && rest.first?.items.count == 2 && rest.first?.isResend == false)
            #expect(Set((first + rest).flatMap { $0.items.map(\.token) }) == Set((0..<6).map(token)), "each device claimed once")
        }
    }

    @Test("APNs unreachable: the device stays pending, retried with back-off, until the deadline; then failed", arguments: Backend.allCases)
    func retries(backend: Backend) async throws {
        try await withStore(backend, { $0.maximumAge = .seconds(60) }) { store in
            let t0 = Date()
            for number in 0..<20 { try await store.register(try registration(number), app: app, now: t0) }
            let (explicit, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload), now: t0)
            let first = try #require(try await store.claim(owner: "w", now: t0).first)
            try await store.complete(first, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "ServiceUnavailable"))], now: t0)
            #expect(try await store.notification(id: explicit.id)?.counts.pending == 1)
            #expect(try await store.claim(owner: "w", includeRanges: false, now: t0.addingTimeInterval(4)).isEmpty, "not before the back-off")
            let second = try #require(try await store.claim(owner: "w", includeRanges: false, now: t0.addingTimeInterval(5)).first)
            #expect(second.items.first?.attempt == 2 && second.isResend)
            try await store.complete(second, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "ServiceUnavailable"))], now: t0.addingTimeInterval(5))
            // Back-off doubles: 10 s. Then the deadline (60 s) passes on a later retry.
            let third = try #require(try await store.claim(owner: "w", includeRanges: false, now: t0.addingTimeInterval(15)).first)
            try await store.complete(third, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "ServiceUnavailable"))], now: t0.addingTimeInterval(58))
            let expired = try #require(try await store.notification(id: explicit.id))
            #expect(expired.status == .done && expired.counts.failed == 1)
            #expect(try await store.deliveries(notificationID: explicit.id, outcome: .failed).items.first?.reason?.contains("ServiceUnavailable") == true)

            // In a broadcast, a device that could not be reached gets a row of its own and is retried.
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: t0)
            for batch in try await claimAll(store, now: t0) {
                try await store.complete(batch, outcomes: batch.items.map { item in
                    DeliveryOutcome(token: item.token, result: item.token == token(7) ? .retry(reason: "TooManyRequests") : .accepted(receipt: nil))
                }, now: t0)
            }
            #expect(try await store.notification(id: broadcast.id)?.status == .sending)
            let retried = try #require(try await store.claim(owner: "w", now: t0.addingTimeInterval(6)).first)
            #expect(retried.items.map(\.token) == [token(7)])
            try await acceptAll(store, retried, now: t0.addingTimeInterval(6))
            let done = try #require(try await store.notification(id: broadcast.id))
            #expect(done.status == .done && done.counts.accepted == 20)
        }
    }

    @Test("badge increments: each device's badge goes up by one per notification, never twice after a crash; setting it resets it", arguments: Backend.allCases)
    func badgeIncrements(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            try await store.register(try registration(1, badge: 5), app: app, now: t0)
            try await store.register(try registration(2), app: app, now: t0)
            for audience in [Audience.tokens([token(1), token(2)]), .all] {
                _ = try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload, badge: .increment), now: t0)
            }
            let explicit = try #require(try await store.claim(owner: "crashed", now: t0).first)
            #expect(Dictionary(uniqueKeysWithValues: explicit.items.map { ($0.token, $0.badge) }) == [token(1): 6, token(2): 1])
            // The worker dies between sending and recording: the lease runs out, another re-sends.
            let again = try #require(try await store.claim(owner: "survivor", includeRanges: false, now: t0.addingTimeInterval(31)).first)
            #expect(Dictionary(uniqueKeysWithValues: again.items.map { ($0.token, $0.badge) }) == [token(1): 6, token(2): 1], "not raised twice")
            try await acceptAll(store, again, now: t0.addingTimeInterval(31))

            let range = try #require(try await store.claim(owner: "crashed", now: t0.addingTimeInterval(31)).first)
            #expect(Dictionary(uniqueKeysWithValues: range.items.map { ($0.token, $0.badge) }) == [token(1): 7, token(2): 2])
            let rangeAgain = try #require(try await store.claim(owner: "survivor", now: t0.addingTimeInterval(62)).first)
            #expect(Dictionary(uniqueKeysWithValues: rangeAgain.items.map { ($0.token, $0.badge) }) == [token(1): 7, token(2): 2], "not raised twice")
            try await acceptAll(store, rangeAgain, now: t0.addingTimeInterval(62))
            #expect(try await store.device(app: app, token: token(1))?.badge == 7)

            // The app was opened: it sets the badge to 0, and the next notification makes it 1.
            try await store.register(try registration(1, badge: 0), app: app)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload, badge: .increment))
            #expect(try await store.claim(owner: "w").first?.items.first?.badge == 1)
        }
    }

    @Test("outcomes and notifications finished before the cutoff are purged in bounded batches", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        try await withStore(backend) { store in
            let old = Date().addingTimeInterval(-30 * 86_400)
            var ids: [String] = []
            for index in 0..<5 {
                let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<30).map { token(index * 100 + $0) }), payload: payload), now: old)
                ids.append(queued.id)
            }
            try await deliverAll(store, now: old)
            let (recent, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(9)]), payload: payload))
            try await deliverAll(store)
            let purged = try await store.purge(finishedBefore: Date().addingTimeInterval(-86_400), batchSize: 40)
            #expect(purged == 5 * 30 + 5)
            for id in ids { #expect(try await store.notification(id: id) == nil) }
            #expect(try await store.notification(id: recent.id)?.counts.accepted == 1)
        }
    }
}
