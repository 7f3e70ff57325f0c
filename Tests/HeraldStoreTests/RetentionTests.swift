import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// What the gateway's housekeeping asks of the store, on both databases: retired devices go
/// after retention in bounded batches, active ones never; each app's backlog is counted.
@Suite("Retention and backlog", .timeLimit(.minutes(6)))
struct RetentionTests {
    @Test("devices retired before the cutoff are purged with their tags, a batch at a time; active and recently retired ones stay",
          arguments: Backend.allCases)
    func retiredDevices(backend: Backend) async throws {
        try await withStore(backend) { store in
            let longAgo = Date().addingTimeInterval(-30 * 86_400)
            for number in 0..<30 { try await store.register(try registration(number, tags: ["t"]), app: app, now: longAgo) }
            // 0..<12 gone long ago, 12..<15 gone just now, the rest active (Apple's rule: gone
            // only if not registered again since the feedback's time).
            let gone = longAgo.addingTimeInterval(60)
            #expect(try await store.recordFeedback(app: app, (0..<12).map { (token($0), gone) }, now: gone) == 12)
            #expect(try await store.recordFeedback(app: app, (12..<15).map { (token($0), Date()) }) == 3)
            let cutoff = Date().addingTimeInterval(-86_400)
            var purged: [Int] = []
            for _ in 0..<10 {
                let count = try await store.purgeRetiredDevices(before: cutoff, limit: 5)
                purged.append(count)
                if count < 5 { break }
            }
            #expect(purged == [5, 5, 2])
            #expect(try await store.countDevices(app: app) == 18)
            #expect(try await store.device(app: app, token: token(0)) == nil)
            #expect(try await store.device(app: app, token: token(12))?.status == .unregistered)
            // Their tags went with them: a tag send reaches the 15 active devices and 3 retired ones are skipped.
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tags(["t"]), payload: payload))
            #expect(try await deliverAll(store).count == 15)
            _ = queued
        }
    }

    @Test("each app's pending deliveries are counted from its active notifications", arguments: Backend.allCases)
    func pendingByApp(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<7 { try await store.register(try registration(number), app: app) }
            try await store.register(try registration(100), app: "other")
            #expect(try await store.pendingDeliveriesByApp().isEmpty)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2)]), payload: payload))
            _ = try await store.enqueue(NotificationRequest(app: "other", audience: .all, payload: payload))
            #expect(try await store.pendingDeliveriesByApp() == [app: 9, "other": 1])
            try await deliverAll(store)
            #expect(try await store.pendingDeliveriesByApp().values.allSatisfy { $0 == 0 })
        }
    }
}
