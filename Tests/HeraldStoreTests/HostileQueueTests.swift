import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The queue under what a quiet test never does: badges at their limit, rows the store never
/// writes, callers racing on one key, cancels racing claims, leases lost, notifications claimed
/// out of order. On both backends.
@Suite("Delivery queue under hostile conditions", .timeLimit(.minutes(6)))
struct HostileQueueTests {
    @Test("a badge at the largest APNs accepts stays there on increment, and the claim goes on for every other device", arguments: Backend.allCases)
    func badgeSaturates(backend: Backend) async throws {
        try await withStore(backend) { store in
            let maximum = DeviceRegistration.maximumBadge
            #expect(maximum == 2_147_483_647)
            try await store.register(try registration(1, badge: maximum), app: app)
            try await store.register(try registration(2, badge: 0), app: app)
            let (raised, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2)]), payload: payload, badge: .increment))
            let (other, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(3)]), payload: payload))

            let batches = try await store.claim(owner: "w")
            let badges = Dictionary(uniqueKeysWithValues: batches.flatMap { $0.items.map { ($0.token, $0.badge) } })
            #expect(badges == [token(1): maximum, token(2): 1, token(3): nil])
            for batch in batches { try await acceptAll(store, batch) }
            #expect(try await store.notification(id: raised.id)?.status == .done)
            #expect(try await store.notification(id: other.id)?.status == .done)
            #expect(try await store.device(app: app, token: token(1))?.badge == maximum)

            // A broadcast raising it again: still the largest.
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload, badge: .increment))
            let range = try await claimAll(store)
            #expect(range.flatMap(\.items).first { $0.token == token(1) }?.badge == maximum)
            #expect(range.flatMap(\.items).first { $0.token == token(2) }?.badge == 2)
        }
    }

    @Test("a badge outside 0...maximumBadge is refused, naming the field and the range, however the registration was made", arguments: Backend.allCases)
    func badgeOutOfRange(backend: Backend) async throws {
        for bad in [-1, DeviceRegistration.maximumBadge + 1] {
            let error = #expect(throws: StoreError.self) { try registration(1, badge: bad) }
            #expect(error?.code == .invalidInput)
            #expect(error?.message.hasPrefix("badge: must be 0 to 2147483647") == true, "\(String(describing: error))")
        }
        try await withStore(backend) { store in
            // `badge` is a var: set after the checked initialiser, the store checks it again.
            var changed = try registration(1)
            changed.badge = DeviceRegistration.maximumBadge + 1
            let error = await #expect(throws: StoreError.self) { try await store.register(changed, app: app) }
            #expect(error?.code == .invalidInput && error?.message.hasPrefix("badge:") == true)
            let stream = AsyncStream<DeviceRegistration> { continuation in
                continuation.yield(changed)
                continuation.finish()
            }
            await #expect(throws: StoreError.self) { try await store.register(contentsOf: stream, app: app) }
            #expect(try await store.device(app: app, token: token(1)) == nil)
        }
    }

    @Test("twenty callers enqueueing one idempotency key at once: one notification, twenty answers naming it, one of them created", arguments: Backend.allCases)
    func concurrentIdempotency(backend: Backend) async throws {
        try await withStore(backend, { $0.maximumConnections = 20 }) { store in
            let answers = try await withThrowingTaskGroup(of: (id: String, created: Bool).self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let (notification, created) = try await store.enqueue(
                            NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload, idempotencyKey: "order-7")
                        )
                        return (notification.id, created)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 20)
            #expect(Set(answers.map(\.id)).count == 1)
            #expect(answers.filter(\.created).count == 1)
            #expect(try await deliverAll(store) == [token(1)], "one notification, sent once")
        }
    }

    @Test("renewing a lease that ran out and was taken over fails with leaseLost; renewing a lease still held extends it", arguments: Backend.allCases)
    func renewFencing(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            for number in 0..<20 { try await store.register(try registration(number), app: app, now: t0) }
            let (explicit, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2)]), payload: payload), now: t0)
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: t0)
            let single = try #require(try await store.claim(owner: "lost", now: t0).first)
            let range = try #require(try await store.claim(owner: "lost", limit: 5, now: t0).first)
            #expect(single.notification.id == explicit.id && range.notification.id == broadcast.id)

            // Renewed at 20 s, the leases last until 50 s: nobody takes that work at 31 s.
            try await store.renew(single, now: t0.addingTimeInterval(20))
            try await store.renew(range, now: t0.addingTimeInterval(20))
            let held = Set((single.items + range.items).map(\.token))
            let meanwhile = try await store.claim(owner: "other", limit: 5, now: t0.addingTimeInterval(31))
            #expect(Set(meanwhile.flatMap(\.items).map(\.token)).isDisjoint(with: held))
            for batch in meanwhile { try await store.release(batch) }

            // At 51 s they ran out, and another worker takes the work over.
            let taken = try await claimAll(store, owner: "new", limit: 5, now: t0.addingTimeInterval(51))
            #expect(held.isSubset(of: Set(taken.flatMap(\.items).map(\.token))))
            for batch in [single, range] {
                let error = await #expect(throws: StoreError.self) { try await store.renew(batch, now: t0.addingTimeInterval(52)) }
                #expect(error?.code == .leaseLost)
            }
            for batch in taken { try await store.renew(batch, now: t0.addingTimeInterval(52)) }
        }
    }

    @Test("a cancelled notification's deliveries in flight are never leased again once their lease runs out; they count as failed", arguments: Backend.allCases)
    func cancelledNotLeasedAgain(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<4).map(token)), payload: payload), now: t0)
            let inFlight = try #require(try await store.claim(owner: "killed", now: t0).first)
            #expect(inFlight.items.count == 4)
            _ = try await store.cancel(id: queued.id, now: t0.addingTimeInterval(1))

            // The worker was killed: its lease runs out; nobody is given that work again.
            #expect(try await store.claim(owner: "other", now: t0.addingTimeInterval(31)).isEmpty)
            #expect(try await store.statistics(now: t0.addingTimeInterval(31)).pendingDeliveries == 0)
            let after = try #require(try await store.notification(id: queued.id))
            #expect(after.status == .cancelled && after.counts.failed == 4 && after.counts.pending == 0, "\(after.counts)")
            #expect(try await store.deliveries(notificationID: queued.id, outcome: .failed).items.map(\.reason) == Array(repeating: "Cancelled", count: 4))

            // The killed worker's late completion changes nothing.
            try await acceptAll(store, inFlight, now: t0.addingTimeInterval(32))
            let final = try #require(try await store.notification(id: queued.id))
            #expect(final.counts.accepted == 0 && final.counts.failed == 4)
        }
    }

    @Test("cancels during a broadcast while workers claim and complete: no deadlock, no error, everything ends", arguments: Backend.allCases)
    func cancelsDuringBroadcast(backend: Backend) async throws {
        try await withStore(backend, { $0.maximumConnections = 24 }) { store in
            let devices = 3000
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for number in 0..<devices { continuation.yield(try! registration(number)) }
                continuation.finish()
            }
            try await store.register(contentsOf: stream, app: app)
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload, badge: .increment))
            var small: [String] = []
            for index in 0..<150 {
                let tokens = (0..<8).map { token((index * 7 + $0 * 13) % devices) }
                small.append(try await store.enqueue(NotificationRequest(app: app, audience: .tokens(tokens), payload: payload, badge: .increment)).notification.id)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for _ in 0..<2000 {
                            let batches = try await store.claim(owner: "worker-\(worker)", limit: 40)
                            if batches.isEmpty { return }
                            for batch in batches { try await acceptAll(store, batch) }
                        }
                    }
                }
                // Four cancellers race the four workers and each other. Not one task per cancel: 150
                // callers waiting on 24 connections would test the pool's connection deadline (5 s)
                // on a loaded 2-core CI machine, not the queue.
                let cancellers = 4, ids = small
                for canceller in 0..<cancellers {
                    group.addTask {
                        for index in stride(from: canceller, to: ids.count, by: cancellers) {
                            _ = try await store.cancel(id: ids[index])
                            if index == ids.count / 2 { _ = try await store.cancel(id: broadcast.id) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // A worker that found every row locked by the others stopped early: what is left drains.
            try await deliverAll(store)
            for id in small + [broadcast.id] {
                let notification = try #require(try await store.notification(id: id))
                #expect(notification.status == .done || notification.status == .cancelled)
                #expect(notification.counts.pending == 0, "\(id): \(notification.counts)")
            }
            let statistics = try await store.statistics()
            #expect(statistics.pendingDeliveries == 0 && statistics.activeNotifications == 0, "\(statistics)")
        }
    }

    @Test("two increments to one device raise it twice whichever is claimed first; a lost lease or a retry raises nothing more", arguments: Backend.allCases)
    func badgeInterleaving(backend: Backend) async throws {
        try await withStore(backend, { $0.leaseDuration = .seconds(30) }) { store in
            let t0 = Date()
            try await store.register(try registration(1, badge: 0), app: app, now: t0)
            func increment(_ audience: Audience, at time: TimeInterval) async throws -> StoredNotification {
                try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload, badge: .increment), now: t0.addingTimeInterval(time)).notification
            }
            func badge() async throws -> Int? { try await store.device(app: app, token: token(1))?.badge }

            // A is stored first but due later; B, stored after it (a later ID), is claimed first.
            let a = try await increment(.tokens([token(1)]), at: 10)
            let b = try await increment(.tokens([token(1)]), at: 0)
            #expect(b.id > a.id)
            let first = try #require(try await store.claim(owner: "w", limit: 1, now: t0.addingTimeInterval(20)).first)
            #expect(first.notification.id == b.id && first.items.first?.badge == 1)
            let second = try #require(try await store.claim(owner: "w", limit: 1, now: t0.addingTimeInterval(20)).first)
            #expect(second.notification.id == a.id && second.items.first?.badge == 2)
            for batch in [first, second] { try await acceptAll(store, batch, now: t0.addingTimeInterval(20)) }
            #expect(try await badge() == 2)

            // A broadcast stored before a notification to one device is claimed after it
            // (single deliveries go first); then its claim's lease runs out and it is taken over.
            let broadcast = try await increment(.all, at: 30)
            let single = try await increment(.tokens([token(1)]), at: 30)
            let singleBatch = try #require(try await store.claim(owner: "w", now: t0.addingTimeInterval(40)).first)
            #expect(singleBatch.notification.id == single.id && singleBatch.items.first?.badge == 3)
            try await acceptAll(store, singleBatch, now: t0.addingTimeInterval(40))
            let lost = try #require(try await store.claim(owner: "lost", now: t0.addingTimeInterval(40)).first)
            #expect(lost.notification.id == broadcast.id && lost.items.first?.badge == 4)
            let again = try #require(try await store.claim(owner: "new", now: t0.addingTimeInterval(71)).first)
            #expect(again.notification.id == broadcast.id && again.isResend && again.items.first?.badge == 4, "not raised twice")
            try await acceptAll(store, again, now: t0.addingTimeInterval(71))
            try await deliverAll(store, now: t0.addingTimeInterval(71))
            #expect(try await store.notification(id: broadcast.id)?.status == .done)
            #expect(try await badge() == 4)

            // A device of a broadcast retried later is sent the badge it was raised to, once.
            let retried = try await increment(.all, at: 80)
            let attempt = try #require(try await store.claim(owner: "w", now: t0.addingTimeInterval(80)).first)
            #expect(attempt.notification.id == retried.id && attempt.items.first?.badge == 5)
            try await store.complete(attempt, outcomes: [DeliveryOutcome(token: token(1), result: .retry(reason: "ServiceUnavailable"))], now: t0.addingTimeInterval(80))
            let retry = try #require(try await store.claim(owner: "w", includeRanges: false, now: t0.addingTimeInterval(90)).first)
            #expect(retry.items.first?.badge == 5)
            try await acceptAll(store, retry, now: t0.addingTimeInterval(90))
            #expect(try await badge() == 5)
        }
    }

    @Test("rows the store never writes (unknown codes, bad badges, a missing notification) are quarantined; the queue drains the rest", arguments: Backend.allCases)
    func poisonRows(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            for number in 0..<10 { try await store.register(try registration(number), app: app) }
            let deadline = Int64(Date().addingTimeInterval(86_400).timeIntervalSince1970 * 1000)
            let blob = backend == .sqlite ? "X'7B7D'" : "'\\x7b7d'::bytea"
            func notification(_ id: String, pushType: String = "alert", badgeMode: Int = 0, kind: Int = 0, status: Int = 0) -> String {
                """
                INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, badge_mode, status, targeted, deadline, created_at)
                VALUES ('\(id)', '\(app)', \(kind), '', \(blob), '\(pushType)', \(badgeMode), \(status), 1, \(deadline), 0);
                """
            }
            func delivery(_ id: String, _ number: Int, badge: String = "NULL") -> String {
                "INSERT INTO deliveries (notification_id, token, state, next_attempt_at, badge) VALUES ('\(id)', '\(token(number))', 0, 0, \(badge));"
            }
            let unknownType = "00000000-0000-7000-8000-000000000001"
            let unknownMode = "00000000-0000-7000-8000-000000000002"
            let unknownKind = "00000000-0000-7000-8000-000000000003"
            let badBadge = "00000000-0000-7000-8000-000000000004"
            let missing = "00000000-0000-7000-8000-000000000005"
            let unknownStatus = "00000000-0000-7000-8000-000000000006"
            var sql = [
                notification(unknownType, pushType: "bogus"), delivery(unknownType, 30),
                notification(unknownMode, badgeMode: 7), delivery(unknownMode, 31),
                notification(unknownKind, kind: 9),
                "INSERT INTO segments (notification_id, number, upper, cursor, state, created_at) VALUES ('\(unknownKind)', 0, NULL, '0', 0, 0);",
                notification(badBadge), delivery(badBadge, 32, badge: "-5"), delivery(badBadge, 33),
                delivery(missing, 34),
                notification(unknownStatus, status: 7), delivery(unknownStatus, 35),
            ]
            // SQLite keeps what it is given: a real number no integer holds, in an integer column.
            if backend == .sqlite { sql.append(delivery(badBadge, 36, badge: "1e300")) }
            try await database.execute(sql.joined(separator: "\n"))
            let (good, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<10).map(token)), payload: payload))

            var sent: [String] = []
            for _ in 0..<50 {
                let batches = try await store.claim(owner: "w", limit: 3)
                if batches.isEmpty { break }
                for batch in batches {
                    sent += batch.items.map(\.token)
                    try await acceptAll(store, batch)
                }
            }
            #expect(Set(sent) == Set((0..<10).map(token) + [token(33)]) && sent.count == 11, "\(sent)")
            #expect(try await store.notification(id: good.id)?.status == .done)

            func reasons(_ id: String) async throws -> [String] {
                try await store.deliveries(notificationID: id, outcome: .failed).items.compactMap(\.reason)
            }
            for (id, what) in [(unknownType, "push type"), (unknownMode, "badge mode"), (missing, "does not exist"), (unknownStatus, "status 7")] {
                let failed = try await reasons(id)
                #expect(failed.count == 1 && failed.allSatisfy { $0.hasPrefix("Quarantined: ") && $0.contains(what) }, "\(id): \(failed)")
            }
            for id in [unknownType, unknownMode, unknownKind] {
                let stopped = try #require(try await store.notification(id: id))
                #expect(stopped.status == .cancelled && stopped.counts.pending == 0, "\(id): \(stopped.status) \(stopped.counts)")
            }
            let mixed = try #require(try await store.notification(id: badBadge))
            #expect(mixed.status == .done && mixed.counts.accepted == 1 && mixed.counts.failed == (backend == .sqlite ? 2 : 1), "\(mixed.counts)")
            #expect(try await reasons(badBadge).allSatisfy { $0.hasPrefix("Quarantined: badge") })
            let statistics = try await store.statistics()
            #expect(statistics.pendingDeliveries == 0 && statistics.pendingRanges == 0 && statistics.activeNotifications == 0, "\(statistics)")
        }
    }
}
