import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Apps defined through the admin API, in the store: definitions kept sealed as given, keys as
/// their digest, a version that every change raises, sealing again only what is as read, and
/// deleting an app leaving none of its rows in any table, on both databases.
@Suite("App definitions", .timeLimit(.minutes(6)))
struct AppDefinitionTests {
    static let sealed: [UInt8] = Array("not JSON: sealed bytes \u{0}\u{1}\u{ff}".utf8)

    @Test("a definition is created, then replaced; the version rises with each change; the catalog lists it without its bytes", arguments: Backend.allCases)
    func putAndRead(backend: Backend) async throws {
        try await withStore(backend) { store in
            let start = try await store.appCatalogVersion()
            #expect(try await store.appCatalog() == AppCatalog(version: start, definitions: [], keys: []))
            let made = Date(timeIntervalSince1970: 1_800_000_000)
            let first = try await store.putAppDefinition(id: "blog", sealed: Self.sealed, sealedWith: "k1", now: made)
            #expect(first.created && first.definition.createdAt == made && first.definition.updatedAt == made)
            let replaced = try await store.putAppDefinition(id: "blog", sealed: [1, 2, 3], sealedWith: "k2", now: made.addingTimeInterval(5))
            #expect(!replaced.created && replaced.definition.createdAt == made && replaced.definition.updatedAt == made.addingTimeInterval(5))
            try await store.putAppDefinition(id: "anvil", sealed: Self.sealed, sealedWith: "k1", now: made)

            let catalog = try await store.appCatalog()
            #expect(catalog.version == start + 3)
            #expect(catalog.definitions.map(\.id) == ["anvil", "blog"] && catalog.definitions[1].sealedWith == "k2")
            let read = try await store.appDefinitions(ids: ["blog", "anvil", "missing"])
            #expect(read.map(\.id) == ["anvil", "blog"])
            #expect(read[0].sealed == Self.sealed && read[1].sealed == [1, 2, 3], "the bytes come back as stored, NUL and 0xFF included")
            #expect(try await store.appDefinition(id: "missing") == nil)
        }
    }

    @Test("keys: one name per app, kept as their digest; adding and deleting one raises the version", arguments: Backend.allCases)
    func keys(backend: Backend) async throws {
        try await withStore(backend) { store in
            let digest = (0..<32).map { UInt8($0 * 7 & 0xFF) }
            let key = StoredAppKey(app: "blog", name: "backend", sha256: digest, createdAt: Date(timeIntervalSince1970: 1_800_000_000))
            let before = try await store.appCatalogVersion()
            try await store.addAppKey(key)
            let conflict = await #expect(throws: StoreError.self) {
                try await store.addAppKey(StoredAppKey(app: "blog", name: "backend", sha256: Array(repeating: 1, count: 32), createdAt: Date()))
            }
            #expect(conflict?.code == .conflict)
            await #expect(throws: StoreError.self, "a digest is 32 bytes") { try await store.addAppKey(StoredAppKey(app: "blog", name: "x", sha256: [1], createdAt: Date())) }
            try await store.addAppKey(StoredAppKey(app: "anvil", name: "backend", sha256: Array(repeating: 2, count: 32), createdAt: Date()))
            let catalog = try await store.appCatalog()
            #expect(catalog.version == before + 2)
            #expect(catalog.keys.map(\.app) == ["anvil", "blog"] && catalog.keys[1] == key)
            #expect(try await store.deleteAppKey(app: "blog", name: "backend"))
            #expect(try await !store.deleteAppKey(app: "blog", name: "backend"))
            #expect(try await store.appCatalog().keys.map(\.app) == ["anvil"])
            #expect(try await store.appCatalogVersion() == before + 3)
        }
    }

    @Test("sealing again writes only a definition still as read, and leaves the version", arguments: Backend.allCases)
    func reseal(backend: Backend) async throws {
        try await withStore(backend) { store in
            let made = Date(timeIntervalSince1970: 1_800_000_000)
            let read = try await store.putAppDefinition(id: "blog", sealed: Self.sealed, sealedWith: "old", now: made).definition
            let version = try await store.appCatalogVersion()
            #expect(try await store.resealAppDefinition(read, sealed: [9, 9], sealedWith: "new"))
            #expect(try await store.appDefinition(id: "blog")?.sealed == [9, 9])
            #expect(try await store.appCatalogVersion() == version)
            // Replaced since it was read: the replacement stays.
            try await store.putAppDefinition(id: "blog", sealed: [7], sealedWith: "old", now: made.addingTimeInterval(1))
            #expect(try await !store.resealAppDefinition(read, sealed: [8], sealedWith: "new"))
            #expect(try await store.appDefinition(id: "blog")?.sealed == [7])
        }
    }

    @Test("deleting an app leaves no row of it in any table, and every row of another app", arguments: Backend.allCases)
    func deleteLeavesNothing(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            var interest = WebhookInterest()
            for app in ["keep", "doomed"] { interest.add(app: app, hook: "https://hooks.example/\(app)", events: Set(WebhookEventType.allCases)) }
            store.setWebhookInterest(interest)
            let now = Date()
            try await Self.populate(store, app: "keep", now: now)
            let baseline = try await tableRowCounts(url: database.url)
            try await Self.populate(store, app: "doomed", now: now)
            let populated = try await tableRowCounts(url: database.url)
            // Rows in every table an app has rows in, so the test shows each one emptied.
            let tables = [
                "devices", "device_tags", "notifications", "deliveries", "notification_reasons", "notification_platforms", "segments", "delivery_minutes",
                "activities", "activity_tokens", "channels", "webhook_events", "app_pacing", "app_definitions", "app_keys", "templates",
                "user_preferences", "frequency", "digests",
            ]
            for table in tables { #expect((populated[table] ?? 0) > (baseline[table] ?? 0), "\(table): the doomed app has rows in it") }

            let version = try await store.appCatalogVersion()
            let deletion = try await store.deleteApp("doomed", batchSize: 2)
            #expect(deletion.hadDefinition && deletion.cancelledNotifications == 2 && deletion.notifications == 4 && deletion.devices == 4, "\(deletion)")
            #expect(try await tableRowCounts(url: database.url) == baseline, "every table as it was before the doomed app's rows")
            #expect(try await store.appCatalogVersion() > version)
            #expect(try await store.appCatalog().definitions.map(\.id) == ["keep"])
            // Nothing of it is claimed after.
            #expect(try await store.claim(owner: "w", now: now.addingTimeInterval(86_400)).allSatisfy { $0.notification.app != "doomed" })
        }
    }

    @Test("an app marked as being deleted is defined again only once gone; deleting again finishes a deletion cut short", arguments: Backend.allCases)
    func deletionCutShort(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            try await store.putAppDefinition(id: "blog", sealed: Self.sealed, sealedWith: "k1")
            try await store.register(try registration(1, tags: ["a"]), app: "blog")
            // As the first step of a deletion leaves it when the process stops after it.
            try await database.execute("UPDATE app_definitions SET deleting_since = 1 WHERE id = 'blog'")
            #expect(try await store.appCatalog().definitions.first?.deletingSince == Date(timeIntervalSince1970: 0.001))
            let refused = await #expect(throws: StoreError.self) { try await store.putAppDefinition(id: "blog", sealed: Self.sealed, sealedWith: "k1") }
            #expect(refused?.code == .conflict)
            let deletion = try await store.deleteApp("blog")
            #expect(deletion.devices == 1)
            #expect(try await store.appCatalog().definitions.isEmpty)
            #expect(try await store.putAppDefinition(id: "blog", sealed: Self.sealed, sealedWith: "k1").created)
        }
    }

    /// Rows of `app` in every table an app has rows in: devices with tags (one an Android
    /// device), a notification sent (one device rejected, the others accepted: reasons, counts by
    /// platform, minutes, webhook events), a broadcast and a paced notification scheduled for
    /// later (ranges, the app's pace), a Live Activity's token, a channel, a definition and a key.
    static func populate(_ store: HeraldStore, app: String, now: Date) async throws {
        for number in 1...3 { try await store.register(try registration(number, user: "u\(number)", tags: ["fans", "beta"]), app: app, now: now) }
        let android = try await store.register(
            try DeviceRegistration(fcm: try FCMAddress(registrationToken: "\(app):APA91b" + String(repeating: "a", count: 40)), tags: ["fans"]), app: app, now: now
        ).device.token
        _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2), token(3), android]), payload: payload), now: now)
        for batch in try await claimAll(store, now: now) where batch.notification.app == app {
            let outcomes = batch.items.map { item in
                DeliveryOutcome(token: item.token, result: item.token == token(1) ? .rejected(reason: "BadDeviceToken", timestamp: nil) : .accepted(receipt: "r"))
            }
            try await store.complete(batch, outcomes: outcomes, now: now)
        }
        var later = NotificationRequest(app: app, audience: .all, payload: payload)
        later.schedule = DeliverySchedule(sendAt: now.addingTimeInterval(3600))
        _ = try await store.enqueue(later, now: now)
        var paced = DeliverySchedule(sendAt: now.addingTimeInterval(3600), ratePerSecond: 10)
        paced.sharesAppPace = true
        var pacedRequest = NotificationRequest(app: app, audience: .tags(["fans"]), payload: payload)
        pacedRequest.schedule = paced
        _ = try await store.enqueue(pacedRequest, now: now)
        try await store.registerActivityToken(app: app, activityID: "A1", token: token(50), now: now)
        try await store.addChannel(StoredChannel(app: app, id: "Y2hhbm5lbA==", environment: .production, storesMostRecent: false, createdAt: now))
        try await store.putAppDefinition(id: app, sealed: sealed, sealedWith: "k1", now: now)
        try await store.addAppKey(StoredAppKey(app: app, name: "backend", sha256: Array(SHA256Digest.of(app)), createdAt: now))
        // A template, a user's choices, a frequency count and a digest (one more notification, sent).
        try await ContentStoreTests.populate(store, app: app, now: now)
    }
}

/// A distinct 32-byte value for each text (a stand-in for a key's SHA-256).
private enum SHA256Digest {
    static func of(_ text: String) -> [UInt8] {
        var bytes = Array(repeating: UInt8(0), count: 32)
        for (index, byte) in text.utf8.enumerated() { bytes[index % 32] ^= byte }
        return bytes
    }
}
