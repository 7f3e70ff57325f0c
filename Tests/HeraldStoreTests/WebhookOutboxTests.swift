import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The webhook outbox on each database: events written in the transaction of the change they
/// report, only for what a webhook wants, and claimed under a lease.
@Suite("Webhook outbox", .timeLimit(.minutes(4)))
struct WebhookOutboxTests {
    static let lease: Duration = .seconds(30)

    /// `shop` has two webhooks, `a` (every event) and `b` (completions only); `quiet` none.
    static var interest: WebhookInterest {
        var interest = WebhookInterest()
        interest.add(app: app, hook: "https://a.example/hook", events: Set(WebhookEventType.allCases))
        interest.add(app: app, hook: "https://b.example/hook", events: [.notificationCompleted])
        return interest
    }

    /// Every event due at `now`, claimed by `owner`, as JSON by type.
    static func claimed(_ store: HeraldStore, owner: String = "sender", now: Date = Date()) async throws -> [WebhookDelivery] {
        try await store.claimWebhookEvents(owner: owner, limit: 1000, lease: lease, now: now)
    }

    static func json(_ event: WebhookDelivery) throws -> JSONValue { try JSONValue(parsing: event.body) }

    @Test("a completion on a test's clock dates its device.retired events, and an Unregistered without Apple's timestamp, by that clock", arguments: Backend.allCases)
    func retiredAtTheCompletionsTime(backend: Backend) async throws {
        try await withStore(backend) { store in
            store.setWebhookInterest(Self.interest)
            let registered = Date(timeIntervalSince1970: 1_800_000_000)  // in 2027: not this machine's clock
            let completed = registered.addingTimeInterval(60)
            try await store.register(try registration(1), app: app, now: registered)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload), now: registered)
            for batch in try await claimAll(store, now: completed) {
                let outcomes = batch.items.map { DeliveryOutcome(token: $0.token, result: .rejected(reason: "Unregistered", timestamp: nil)) }
                try await store.complete(batch, outcomes: outcomes, now: completed)
            }
            let device = try #require(try await store.device(app: app, token: token(1)))
            #expect(device.status == .unregistered && device.invalidatedAt == completed, "\(device)")
            let retired = try await Self.claimed(store, now: completed.addingTimeInterval(1)).filter { $0.type == .deviceRetired }
            #expect(retired.count == 1)
            let createdAt = try retired.first.map(Self.json)?["createdAt"]?.stringValue.map { try Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }
            #expect(createdAt == completed, "\(String(describing: createdAt))")
        }
    }

    @Test("a completion writes delivery.failed, device.retired and notification.completed with it, for each webhook that wants them", arguments: Backend.allCases)
    func writtenWithTheCompletion(backend: Backend) async throws {
        try await withStore(backend) { store in
            store.setWebhookInterest(Self.interest)
            for number in 1...4 { try await store.register(try registration(number), app: app) }
            try await store.register(try registration(9), app: "quiet")
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((1...4).map(token)), payload: payload))
            let (other, _) = try await store.enqueue(NotificationRequest(app: "quiet", audience: .tokens([token(9)]), payload: payload))
            #expect(try await Self.claimed(store).isEmpty, "nothing to report before the completion")

            let seen = Date().addingTimeInterval(60)  // after the registration: the device is retired
            for batch in try await claimAll(store) {
                let outcomes = batch.items.map { item -> DeliveryOutcome in
                    switch item.token {
                    case token(2): DeliveryOutcome(token: item.token, result: .rejected(reason: "Unregistered", timestamp: seen))
                    case token(3): DeliveryOutcome(token: item.token, result: .rejected(reason: "BadDeviceToken", timestamp: nil))
                    case token(4): DeliveryOutcome(token: item.token, result: .failed(reason: "PayloadTooLarge"))
                    case token(9): DeliveryOutcome(token: item.token, result: .rejected(reason: "BadDeviceToken", timestamp: nil))
                    default: DeliveryOutcome(token: item.token, result: .accepted(receipt: nil))
                    }
                }
                try await store.complete(batch, outcomes: outcomes)
            }
            #expect(try await store.notification(id: other.id)?.status == .done)

            let events = try await Self.claimed(store)
            #expect(events.allSatisfy { $0.app == app && $0.attempt == 1 }, "an app without webhooks writes nothing")
            let byHook = Dictionary(grouping: events, by: \.hook)
            #expect(byHook["https://b.example/hook"]?.map(\.type) == [.notificationCompleted])
            let toA = byHook["https://a.example/hook"] ?? []
            #expect(toA.count == 6, "\(toA.map(\.type))")

            let failed = try toA.filter { $0.type == .deliveryFailed }.map(Self.json)
            #expect(Set(failed.compactMap { $0["data"]?["token"]?.stringValue }) == [token(2), token(3), token(4)])
            let four = failed.first { $0["data"]?["token"]?.stringValue == token(4) }
            #expect(four?["data"]?["outcome"] == "failed" && four?["data"]?["reason"] == "PayloadTooLarge" && four?["data"]?["notification"]?.stringValue == queued.id)

            let retired = try toA.filter { $0.type == .deviceRetired }.map(Self.json)
            let unregistered = retired.first { $0["data"]?["token"]?.stringValue == token(2) }
            #expect(unregistered?["data"]?["status"] == "unregistered" && unregistered?["data"]?["reason"] == "Unregistered")
            #expect(unregistered?["data"]?["kind"] == "alert" && unregistered?["data"]?["timestamp"]?.stringValue != nil, "APNs's timestamp")
            let invalid = retired.first { $0["data"]?["token"]?.stringValue == token(3) }
            #expect(invalid?["data"]?["status"] == "invalid" && invalid?["data"]?["timestamp"] == nil)

            let completed = events.filter { $0.type == .notificationCompleted }
            #expect(Set(completed.map(\.id)).count == 1, "one event, one ID, for both webhooks")
            let body = try Self.json(try #require(completed.first))
            #expect(body["type"] == "notification.completed" && body["app"]?.stringValue == app && body["id"]?.stringValue?.hasPrefix("evt_") == true)
            #expect(body["createdAt"]?.stringValue != nil)
            #expect(body["data"]?["notification"]?.stringValue == queued.id && body["data"]?["status"] == "done")
            #expect(body["data"]?["counts"] == ["accepted": 1, "rejected": 2, "failed": 1, "optedOut": 0, "capped": 0, "digested": 0])
            #expect(body["data"]?["reasons"] == ["rejected": ["BadDeviceToken": 1, "Unregistered": 1], "failed": ["PayloadTooLarge": 1]])
        }
    }

    @Test("an app's outbox holds maximumPending rows: events past it are refused and counted, another app's are not, and room that frees is found again", arguments: Backend.allCases)
    func boundedOutbox(backend: Backend) async throws {
        try await withStore(backend) { store in
            var interest = WebhookInterest()
            interest.add(app: app, hook: "https://a.example/hook", events: [.deliveryFailed])
            interest.add(app: "other", hook: "https://o.example/hook", events: [.deliveryFailed])
            interest.maximumPending = 50
            store.setWebhookInterest(interest)
            let t0 = Date()
            /// Devices `numbers` of `app` each fail a notification of their own at `time`.
            func fail(_ numbers: ClosedRange<Int>, app: String = app, at time: Date) async throws {
                for number in numbers { try await store.register(try registration(number), app: app, now: time) }
                _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens(numbers.map(token)), payload: payload), now: time)
                for batch in try await claimAll(store, now: time) {
                    try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: "PayloadTooLarge")) }, now: time)
                }
            }
            func pending(_ app: String = app) async throws -> Int {
                try await store.pendingWebhookEvents().filter { $0.app == app }.map(\.count).reduce(0, +)
            }

            try await fail(1...80, at: t0)
            #expect(try await pending() == 50)
            #expect(store.takeRefusedWebhookEvents() == [WebhookEventCount(app: app, type: .deliveryFailed, count: 30)])
            #expect(store.takeRefusedWebhookEvents().isEmpty, "each refusal is reported once")
            try await fail(1...3, app: "other", at: t0)
            #expect(try await pending("other") == 3, "one app's full outbox leaves another's alone")

            // 20 sent: room for 20, found when the outbox is next counted (not within 2 s of the last count).
            let sent = try await store.claimWebhookEvents(owner: "sender", limit: 20, lease: Self.lease, now: t0)
            for event in sent.filter({ $0.app == app }) { #expect(try await store.finishWebhookEvent(event, owner: "sender")) }
            let left = try await pending()
            #expect(left == 50 - sent.filter { $0.app == app }.count)
            try await fail(81...90, at: t0.addingTimeInterval(1))
            #expect(try await pending() == left, "counted 1 s ago: still full")
            try await fail(91...150, at: t0.addingTimeInterval(3))
            #expect(try await pending() == 50, "counted again: filled up to the bound, not past it")
            let refused = store.takeRefusedWebhookEvents()
            #expect(refused == [WebhookEventCount(app: app, type: .deliveryFailed, count: 10 + 60 - (50 - left))], "\(refused)")
        }
    }

    @Test("a completion that loses its lease is rolled back with its events; its new holder's completion writes them", arguments: Backend.allCases)
    func rolledBackWithTheCompletion(backend: Backend) async throws {
        try await withStore(backend) { store in
            store.setWebhookInterest(Self.interest)
            try await registerAll(store, 20) { try registration($0) }
            let now = Date()
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload), now: now)
            let first = try await store.claim(owner: "first", limit: 1000, now: now)
            // Its lease runs out; another worker takes the ranges over.
            let later = now.addingTimeInterval(61)  // the store's lease is 60 s
            let second = try await claimAll(store, owner: "second", now: later)
            #expect(!first.isEmpty && !second.isEmpty)
            let reject = { (batch: WorkBatch) in batch.items.map { DeliveryOutcome(token: $0.token, result: .rejected(reason: "BadDeviceToken", timestamp: nil)) } }
            for batch in first {
                await #expect(throws: StoreError.self) { try await store.complete(batch, outcomes: reject(batch), now: later) }
            }
            #expect(try await Self.claimed(store, now: later).isEmpty, "the rolled-back completion wrote nothing")
            for batch in second { try await store.complete(batch, outcomes: reject(batch), now: later) }
            let events = try await Self.claimed(store, now: later)
            let toA = events.filter { $0.hook == "https://a.example/hook" }
            #expect(toA.filter { $0.type == .deliveryFailed }.count == 20)
            #expect(toA.filter { $0.type == .deviceRetired }.count == 20)
            #expect(events.filter { $0.type == .notificationCompleted }.count == 2)
        }
    }

    @Test("claims: leased to one sender, taken over with the same ID when its lease runs out, retried at its time, gone once sent", arguments: Backend.allCases)
    func leases(backend: Backend) async throws {
        try await withStore(backend) { store in
            store.setWebhookInterest(Self.interest)
            try await store.register(try registration(1), app: app)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1)]), payload: payload))
            for batch in try await claimAll(store) { try await acceptAll(store, batch) }
            let now = Date()
            let held = try await store.claimWebhookEvents(owner: "one", limit: 1, lease: Self.lease, now: now)
            #expect(held.count == 1 && held[0].type == .notificationCompleted && held[0].attempt == 1)
            let pending = try await store.pendingWebhookEvents()
            #expect(pending.first { $0.type == .notificationCompleted }?.count == 2, "one row per webhook: \(pending)")
            let other = try await store.claimWebhookEvents(owner: "two", limit: 10, lease: Self.lease, now: now)
            #expect(other.count == 1 && other[0].hook != held[0].hook, "the held one is not claimed again while its lease lives")
            #expect(try await store.finishWebhookEvent(other[0], owner: "two"))

            let expired = now.addingTimeInterval(31)  // the lease is 30 s
            let takenOver = try await store.claimWebhookEvents(owner: "two", limit: 10, lease: Self.lease, now: expired)
            #expect(takenOver.map(\.id) == [held[0].id] && takenOver.first?.attempt == 2, "the same event, a second attempt")
            #expect(try await !store.finishWebhookEvent(held[0], owner: "one"), "the first sender's lease is lost")
            let retryAt = expired.addingTimeInterval(5)
            #expect(try await store.retryWebhookEvent(takenOver[0], owner: "two", at: retryAt, error: "HTTP 500"))
            #expect(try await store.claimWebhookEvents(owner: "two", limit: 10, lease: Self.lease, now: retryAt.addingTimeInterval(-1)).isEmpty, "not due yet")
            let again = try await store.claimWebhookEvents(owner: "three", limit: 10, lease: Self.lease, now: retryAt)
            #expect(again.map(\.id) == [held[0].id] && again.first?.attempt == 3 && again.first?.body == held[0].body, "the same bytes every attempt")
            #expect(try await store.finishWebhookEvent(again[0], owner: "three"))
            #expect(try await store.pendingWebhookEvents().isEmpty)
        }
    }

    @Test("senders claiming at once (stores of their own, as processes): each event claimed once", arguments: Backend.allCases)
    func concurrentSenders(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let url = try await backend.storeURL(scratch: scratch)
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in
            store.setWebhookInterest(Self.interest)
            try await registerAll(store, 300) { try registration($0) }
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            for batch in try await claimAll(store) {
                try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: "Shutdown")) })
            }
            let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                for sender in 0..<4 {
                    group.addTask {
                        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { own in
                            var ids: [String] = []
                            for _ in 0..<1000 {
                                let events = try await own.claimWebhookEvents(owner: "sender-\(sender)", limit: 7, lease: Self.lease)
                                if events.isEmpty { break }
                                for event in events {
                                    ids.append("\(event.id) \(event.hook)")
                                    try await own.finishWebhookEvent(event, owner: "sender-\(sender)")
                                }
                            }
                            return ids
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claimed.count == 302, "300 delivery.failed and a completion to two webhooks")
            #expect(Set(claimed).count == claimed.count, "none twice")
        }
    }
}
