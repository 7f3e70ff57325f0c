import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// What an operator looks at: devices counted by status, kind and environment, unfinished work,
/// and deliveries ended per minute.
@Suite("Overview", .timeLimit(.minutes(6)))
struct OverviewTests {
    @Test("devices by status, kind and environment; unfinished work; another app's never", arguments: Backend.allCases)
    func counts(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<5 { try await store.register(try registration(number), app: app) }
            try await store.register(try DeviceRegistration(token: token(10), kind: .voip), app: app)
            try await store.register(try DeviceRegistration(token: token(11), environment: .sandbox), app: app)
            try await store.register(try registration(12), app: "elsewhere")
            _ = try await store.recordFeedback(app: app, [(token(0), Date().addingTimeInterval(60))])

            let counts = try await store.deviceCounts(app: app)
            #expect(counts.reduce(0) { $0 + $1.count } == 7)
            #expect(counts.filter { $0.status == .unregistered }.reduce(0) { $0 + $1.count } == 1)
            #expect(counts.filter { $0.kind == .voip }.map(\.count) == [1])
            #expect(counts.filter { $0.environment == .sandbox }.map(\.count) == [1])
            #expect(counts.filter { $0.environment == nil }.reduce(0) { $0 + $1.count } == 6, "registered without one: the app's")

            #expect(try await store.queue(app: app) == AppQueue(activeNotifications: 0, pendingDeliveries: 0))
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2), token(0)]), payload: payload))
            _ = try await store.enqueue(NotificationRequest(app: "elsewhere", audience: .all, payload: payload))
            // token(0) is known to be gone: rejected when queued, so not pending.
            #expect(try await store.queue(app: app) == AppQueue(activeNotifications: 1, pendingDeliveries: 2))
        }
    }

    @Test("deliveries ended per minute: completions and refusals at queueing, zero-filled, purged with retention", arguments: Backend.allCases)
    func activity(backend: Backend) async throws {
        try await withStore(backend) { store in
            // A whole minute, so the test's own minutes are known.
            let base = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60)
            for number in 0..<6 { try await store.register(try registration(number), app: app) }
            _ = try await store.recordFeedback(app: app, [(token(5), base.addingTimeInterval(60))])
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<6).map(token)), payload: payload), now: base)
            let batches = try await claimAll(store, now: base.addingTimeInterval(1))
            for batch in batches {
                let outcomes = batch.items.map { item in
                    switch item.token {
                    case token(0): DeliveryOutcome(token: item.token, result: .rejected(reason: .apns(.badDeviceToken), timestamp: nil))
                    case token(1): DeliveryOutcome(token: item.token, result: .failed(reason: .apns(.topicDisallowed)))
                    case token(2): DeliveryOutcome(token: item.token, result: .retry(reason: .apns(.serviceUnavailable)))
                    default: DeliveryOutcome(token: item.token, result: .accepted(receipt: nil))
                    }
                }
                // Two minutes after it was queued.
                try await store.complete(batch, outcomes: outcomes, now: base.addingTimeInterval(125))
            }
            _ = try await store.enqueue(NotificationRequest(app: "elsewhere", audience: .tokens([token(9)]), payload: payload), now: base)

            let minutes = try await store.activity(app: app, minutes: 5, now: base.addingTimeInterval(150))
            #expect(minutes.map(\.start) == (-2...2).map { base.addingTimeInterval(Double($0) * 60) }, "five minutes, oldest first, the last now's")
            #expect(minutes[2] == ActivityMinute(start: base, rejected: 1), "token(5), known gone, refused when queued")
            #expect(minutes[4] == ActivityMinute(start: base.addingTimeInterval(120), accepted: 2, rejected: 1, failed: 1), "a retry has not ended")
            #expect(minutes.filter { $0.accepted + $0.rejected + $0.failed > 0 }.count == 2)
            #expect(try await store.activity(app: app, minutes: 10_000).count == 1440, "at most a day")

            // Retention: minutes before the cutoff go with the notifications.
            _ = try await deliverAll(store, now: base.addingTimeInterval(3600))
            _ = try await store.purge(finishedBefore: base.addingTimeInterval(90))
            let after = try await store.activity(app: app, minutes: 5, now: base.addingTimeInterval(150))
            #expect(after[2] == ActivityMinute(start: base), "purged")
            #expect(after[4].accepted == 2)
        }
    }

    @Test("a cancel counts the devices it stopped as failed in its minute, whether or not a worker had claimed them", arguments: Backend.allCases)
    func cancelCounts(backend: Backend) async throws {
        try await withStore(backend) { store in
            let base = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60)
            for number in 0..<3 { try await store.register(try registration(number), app: app) }
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((0..<3).map(token)), payload: payload), now: base)
            // One claimed (the worker then finds it cancelled), two never claimed.
            let claimed = try #require(try await store.claim(owner: "worker-1", limit: 1, now: base.addingTimeInterval(1)).first)
            _ = try await store.cancel(id: queued.id, now: base.addingTimeInterval(2))
            try await store.complete(claimed, outcomes: claimed.items.map { DeliveryOutcome(token: $0.token, result: .accepted(receipt: nil)) }, now: base.addingTimeInterval(3))
            let minute = try await store.activity(app: app, minutes: 1, now: base.addingTimeInterval(4))
            let counted = minute[0].accepted + minute[0].rejected + minute[0].failed
            #expect(minute[0].failed >= 2 && counted == 3, "every device counted once: \(minute[0])")
            let stored = try #require(try await store.notification(id: queued.id))
            #expect(stored.counts.accepted + stored.counts.failed == counted, "as the notification counts them")
        }
    }
}
