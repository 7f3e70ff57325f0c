import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// Receipts, their keys and the event stream in the store, on both databases.
@Suite("Receipts and the event stream in the store", .timeLimit(.minutes(4)))
struct ReceiptStoreTests {
    /// One notification to devices 1...3, sent and accepted; its ID.
    static func sent(_ store: HeraldStore) async throws -> String {
        for number in 1...3 { try await store.register(try registration(number), app: app) }
        let (notification, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens((1...3).map(token)), payload: payload))
        try await deliverAll(store)
        return notification.id
    }

    /// The strings of a JSON array, sorted.
    static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap(\.stringValue).sorted()
    }

    static func receipt(_ notification: String, _ number: Int, _ event: ReceiptEvent, action: String = "", platform: DevicePlatform = .apns) -> ReceiptRecord {
        ReceiptRecord(app: app, notification: notification, device: token(number), platform: platform, event: event, action: action, issuedAt: Date().addingTimeInterval(-2))
    }

    @Test("each (notification, device, event, action) is stored and counted once, in one call or two; the lookup finds the app and the device by its hash", arguments: Backend.allCases)
    func once(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = try await Self.sent(store)
            let first = try await store.recordReceipts([
                Self.receipt(id, 1, .received), Self.receipt(id, 1, .received), Self.receipt(id, 2, .opened),
                Self.receipt(id, 3, .clicked, action: "reply"), Self.receipt(id, 3, .clicked, action: "archive"),
            ])
            #expect(first.count == 4, "the repeat in the same call counts once")
            let again = try await store.recordReceipts([Self.receipt(id, 1, .received), Self.receipt(id, 2, .opened), Self.receipt(id, 2, .dismissed)])
            #expect(again.map(\.event) == [.dismissed])
            let counts = try await store.receiptCounts(notification: id)
            #expect(counts.total(.received) == 1 && counts.total(.opened) == 1 && counts.total(.dismissed) == 1 && counts.total(.clicked) == 2)
            let funnel = try await store.funnel(notification: id)
            let apns = try #require(funnel.byPlatform[.apns])
            #expect(apns.received == 1 && apns.opened == 2 && apns.clicked == 1 && apns.dismissed == 1, "opened: devices 2 and 3; clicked: device 3 once")
            #expect(apns.receivedLatency != nil && apns.openedLatency != nil)

            let hash = UInt32(truncatingIfNeeded: KeySpace.hash(token(2)))
            #expect(try await store.notificationApps([id, "0190f2a4-7b3c-7d10-8e2f-1a2b3c4d5e6f"]) == [id: app])
            let key = DeviceHashKey(app: app, kind: .alert, hash: hash)
            #expect(try await store.receiptDevices([key, DeviceHashKey(app: app, kind: .voip, hash: hash)]) == [key: [token(2)]], "by kind too")
            // A device no longer registered is not found.
            _ = try await store.deleteDevice(app: app, token: token(2))
            #expect(try await store.receiptDevices([key]).isEmpty)
        }
    }

    @Test("the event stream: queued, accepted with the batch's devices, completed, then receipts, in order; read a page at a time from any line's cursor", arguments: Backend.allCases)
    func stream(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = try await Self.sent(store)
            _ = try await store.recordReceipts([Self.receipt(id, 1, .received), Self.receipt(id, 2, .opened)])
            // On PostgreSQL a line shows once every transaction older than it has ended, in any
            // database of the cluster (another test's may be open): waited for, bounded.
            var all = try await store.events(app: app)
            for _ in 0..<200 where all.count < 5 {
                try await Task.sleep(for: .milliseconds(50))
                all = try await store.events(app: app)
            }
            #expect(all.map(\.type) == [.queued, .accepted, .completed, .received, .opened], "\(all.map(\.type))")
            let accepted = try JSONValue(parsing: Array(all[1].data.utf8))
            #expect(accepted["count"]?.intValue == 3 && Self.strings(accepted["devices"]) == (1...3).map(token))
            #expect(try JSONValue(parsing: Array(all[3].data.utf8))["device"]?.stringValue == token(1))
            var paged: [StreamEvent] = []
            var cursor = EventCursor.start
            for _ in 0..<10 {
                let page = try await store.events(app: app, after: cursor, limit: 2)
                if page.isEmpty { break }
                paged += page
                cursor = try #require(EventCursor(text: page.last!.cursor))
            }
            #expect(paged == all)
            #expect(try await store.events(app: "other").isEmpty, "each app reads its own")
            // Retention: lines older than the cutoff go.
            #expect(try await store.purgeEvents(before: Date().addingTimeInterval(60), limit: 100) == all.count)
            #expect(try await store.events(app: app).isEmpty)
        }
    }

    @Test("PostgreSQL: a line written by a transaction still open holds back the lines of later ones, so a cursor never passes a line that commits after it")
    func noLineSkipped() async throws {
        try await withStore(.postgres) { store, raw in
            let id = try await Self.sent(store)
            var before = try await store.events(app: app)
            for _ in 0..<200 where before.count < 3 {
                try await Task.sleep(for: .milliseconds(50))
                before = try await store.events(app: app)
            }
            let slow = Task {
                try await PostgresCluster.shared().psql(
                    "BEGIN; INSERT INTO events (app, type, at, data) VALUES ('shop', 0, 0, '{\"slow\":true}'); SELECT pg_sleep(4); COMMIT;", database: raw.url)
            }
            // Until the slow transaction holds its xid (bounded).
            var open = false
            for _ in 0..<100 where !open {
                let active = try await PostgresCluster.shared().psql(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(4)%' AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()", database: raw.url)
                open = active.trimmingCharacters(in: .whitespacesAndNewlines) == "1"
                if !open { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(open, "the slow transaction started")
            _ = try await store.recordReceipts([Self.receipt(id, 1, .received)])
            let last = try #require(before.last)
            let cursor = try #require(EventCursor(text: last.cursor))
            #expect(try await store.events(app: app, after: cursor).isEmpty, "the receipt's line waits for the older transaction")
            _ = try await slow.value
            var after = try await store.events(app: app, after: cursor)
            for _ in 0..<200 where after.count < 2 {
                try await Task.sleep(for: .milliseconds(50))
                after = try await store.events(app: app, after: cursor)
            }
            #expect(after.count == 2)
            #expect(after.first?.data == "{\"slow\":true}" && after.last?.type == .received, "the older transaction's line first")
        }
    }

    @Test("the first key is made on first use; a rotation makes the next slot's key sign, the old one verifying until its overlap ends", arguments: Backend.allCases)
    func keys(backend: Backend) async throws {
        try await withStore(backend) { store in
            let now = Date()
            let first = try await store.receiptKeys(app: app, now: now)
            #expect(first.count == 1 && first[0].slot == 0 && first[0].generation == 1 && first[0].secret.count == 32 && first[0].expiresAt == nil)
            #expect(try await store.receiptKeys(app: app, now: now) == first, "made once")
            #expect(try await store.receiptKeys(app: "other", now: now).first?.secret != first[0].secret, "each app its own")
            let rotated = try await store.rotateReceiptKey(app: app, overlap: 600, now: now)
            #expect(rotated.map(\.slot) == [1, 0] && rotated[0].expiresAt == nil && rotated[1].expiresAt != nil)
            #expect(try await store.receiptKeys(app: app, now: now.addingTimeInterval(601)).map(\.slot) == [1], "the old one stops verifying after the overlap")
            // Sixteen rotations come back to slot 0.
            var slots: [Int] = []
            for _ in 0..<15 { slots.append(try await store.rotateReceiptKey(app: app, overlap: 0, now: now)[0].slot) }
            #expect(slots == Array(2...15) + [0])
        }
    }

    @Test("receipts go to the webhooks that ask for delivery.receipt only", arguments: Backend.allCases)
    func webhooks(backend: Backend) async throws {
        try await withStore(backend) { store in
            var interest = WebhookInterest()
            interest.add(app: app, hook: "https://wants.example/hook", events: [.deliveryReceipt])
            interest.add(app: app, hook: "https://default.example/hook", events: WebhookEventType.byDefault)
            store.setWebhookInterest(interest)
            let id = try await Self.sent(store)
            _ = try await store.recordReceipts([Self.receipt(id, 3, .clicked, action: "reply")])
            let events = try await store.claimWebhookEvents(owner: "sender", limit: 100, lease: .seconds(30), now: Date())
            let receipts = events.filter { $0.type == .deliveryReceipt }
            #expect(receipts.map(\.hook) == ["https://wants.example/hook"])
            let first = try #require(receipts.first)
            let body = try JSONValue(parsing: first.body)
            #expect(body["data"]?["event"]?.stringValue == "clicked" && body["data"]?["action"]?.stringValue == "reply" && body["data"]?["token"]?.stringValue == token(3))
        }
    }
}
