import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// An SQLite database written by an earlier Herald, opened by this one: migration 6 keeps devices
/// by key, and everything stored before it is found, listed and sent to as before.
@Suite("SQLite upgrade", .timeLimit(.minutes(6)))
struct SQLiteUpgradeTests {
    @Test("a database at schema 5, with devices stored before hashes were, keeps every device, its fields and its tags")
    func fromSchema5() async throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.db")
        // Schema 5 as an earlier Herald left it: devices 0…3 with their hash, 4…5 stored before
        // migration 4 (no hash yet), device 3 unregistered, 0 and 4 tagged.
        var script = SQLiteSchema.migrations[0..<5].joined().map { $0 + ";\n" }.joined()
        script += SQLiteSchema.createVersions + ";\n"
        script += (1...5).map { "INSERT INTO herald_schema VALUES (\($0), 0);\n" }.joined()
        for number in 0..<6 {
            let hash = number < 4 ? String(KeySpace.hash(token(number))) : "NULL"
            let status = number == 3 ? 1 : 0
            script += """
                INSERT INTO devices (app, token, user_id, tags, badge, status, created_at, updated_at, hash)
                VALUES ('\(app)', '\(token(number))', 'user-\(number % 2)', \(number % 4 == 0 ? "'vip'" : "NULL"), \(number), \(status), 1, 2, \(hash));\n
                """
        }
        for number in [0, 4] {
            let hash = number < 4 ? String(KeySpace.hash(token(number))) : "NULL"
            script += "INSERT INTO device_tags (app, tag, token, hash) VALUES ('\(app)', 'vip', '\(token(number))', \(hash));\n"
        }
        let python = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()"
        _ = try await runCommand("python3", ["-c", python, path, script])

        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: "sqlite:\(path)")) { store in
            try await store.checkReady()
            for number in 0..<6 {
                let device = try #require(try await store.device(app: app, token: token(number)), "device \(number) is found by its token")
                #expect(device.user == "user-\(number % 2)" && device.badge == number && device.createdAt == Date(milliseconds: 1))
                #expect(device.tags == (number % 4 == 0 ? ["vip"] : []))
                #expect(device.status == (number == 3 ? .unregistered : .active))
            }
            let listed = try await store.devices(app: app, limit: 100).items.map(\.token)
            #expect(listed.sorted() == (0..<6).map(token), "every device listed once")
            #expect(try await store.devices(app: app, filter: DeviceFilter(user: "user-1"), limit: 100).items.map(\.token).sorted() == [1, 3, 5].map(token))
            #expect(try await store.devices(app: app, filter: DeviceFilter(status: .unregistered), limit: 100).items.map(\.token) == [token(3)])
            #expect(try await store.devices(app: app, filter: DeviceFilter(tag: "vip"), limit: 100).items.map(\.token).sorted() == [0, 4].map(token))

            // Registering again updates the row it was (no second row under another key).
            try await store.register(try registration(5, badge: 9), app: app)
            #expect(try await store.countDevices(app: app) == 6)
            #expect(try await store.device(app: app, token: token(5))?.badge == 9)

            // A broadcast reaches the active devices, a tag send its tagged ones.
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            #expect(try await deliverAll(store).sorted() == [0, 1, 2, 4, 5].map(token))
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tags(["vip"]), payload: payload))
            #expect(try await deliverAll(store).sorted() == [0, 4].map(token))

            #expect(try await store.deleteDevice(app: app, token: token(4)))
            #expect(try await store.device(app: app, token: token(4)) == nil)
        }
    }
}

/// A database at the schema before the platforms were equal (counts per platform in columns, a
/// device's platform known only from its address), with data in it, opened by this Herald: the
/// counts are moved and each device's and delivery's platform stored, none lost, on both databases.
@Suite("Platforms: the upgrade", .timeLimit(.minutes(6)))
struct PlatformCountsUpgradeTests {
    @Test("a notification's Web Push and FCM counts in the columns of the schema before are its counts per platform after", arguments: Backend.allCases)
    func moved(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let url = try await backend.storeURL(scratch: scratch)
        let raw = RawDatabase(backend: backend, url: url)
        let migrations = backend == .sqlite ? SQLiteSchema.migrations : PostgresSchema.migrations
        let before = try Self.platformsMigration(migrations)
        var script = migrations[0..<before].joined().map { $0 + ";\n" }.joined()
        script += (backend == .sqlite ? SQLiteSchema.createVersions : PostgresSchema.createVersions) + ";\n"
        script += (1...before).map { "INSERT INTO herald_schema VALUES (\($0), 0);\n" }.joined()
        // Three notifications as an earlier Herald left them: one to APNs devices only, one with
        // browsers and Android devices among its outcomes, one with browsers only.
        let payload = backend == .sqlite ? "X'7B7D'" : "'\\x7b7d'::bytea"
        for (id, counts) in [("01900000-0000-7000-8000-000000000001", (0, 0, 0, 0, 0, 0)), ("01900000-0000-7000-8000-000000000002", (3, 1, 2, 4, 0, 1)), ("01900000-0000-7000-8000-000000000003", (5, 0, 0, 0, 0, 0))] {
            script += """
                INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, badge_mode, status, targeted,
                    accepted, rejected, failed, deadline, created_at, finished_at,
                    webpush_accepted, webpush_rejected, webpush_failed, fcm_accepted, fcm_rejected, fcm_failed)
                VALUES ('\(id)', '\(app)', 0, '', \(payload), 'alert', 0, 2, 20, 12, 2, 3, 9999999999999, 1, 2,
                    \(counts.0), \(counts.1), \(counts.2), \(counts.3), \(counts.4), \(counts.5));\n
                """
        }
        // Its rejections by reason, which the totals are read from.
        script += "INSERT INTO notification_reasons (notification_id, reason, count) VALUES ('01900000-0000-7000-8000-000000000002', 'Unregistered', 2);\n"
        try await raw.execute(script)

        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in
            try await store.checkReady()
            let mixed = try #require(try await store.notification(id: "01900000-0000-7000-8000-000000000002"))
            #expect(mixed.counts.byPlatform == [.webpush: PlatformCounts(accepted: 3, rejected: 1, failed: 2), .fcm: PlatformCounts(accepted: 4, failed: 1)])
            #expect(mixed.counts.apns == PlatformCounts(accepted: 5, rejected: 1, failed: 0), "APNs's: the totals less the others'")
            #expect(try await store.notification(id: "01900000-0000-7000-8000-000000000003")?.counts.byPlatform == [.webpush: PlatformCounts(accepted: 5)])
            #expect(try await store.notification(id: "01900000-0000-7000-8000-000000000001")?.counts.byPlatform == [:])
            let listed = try await store.notifications(app: app, limit: 10).items
            #expect(Set(listed.map(\.id)) == ["01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000002", "01900000-0000-7000-8000-000000000003"])
            #expect(listed.first { $0.id == "01900000-0000-7000-8000-000000000002" }?.counts.android == PlatformCounts(accepted: 4, failed: 1), "the list reads them too")
        }
    }

    @Test("a browser and an Android device registered before, and deliveries queued to them: their platform is stored after, and claims give it", arguments: Backend.allCases)
    func platformsStored(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let url = try await backend.storeURL(scratch: scratch)
        let migrations = backend == .sqlite ? SQLiteSchema.migrations : PostgresSchema.migrations
        let before = try Self.platformsMigration(migrations)
        var script = migrations[0..<before].joined().map { $0 + ";\n" }.joined()
        script += (backend == .sqlite ? SQLiteSchema.createVersions : PostgresSchema.createVersions) + ";\n"
        script += (1...before).map { "INSERT INTO herald_schema VALUES (\($0), 0);\n" }.joined()
        let subscription = try WebPushAddress(endpoint: "https://web.push.apple.com/QGuH", p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA", auth: "tBHItJI5svbpez7KI4CCXg")
        let browser = subscription.id
        let android = FCMAddress.id(forToken: "f1:APA91b-token")
        let apns = token(1)
        // The devices as an earlier Herald registered them: the browser with its subscription, the
        // Android device with its registration token, the APNs token bare.
        for (id, webPush, fcm) in [(browser, "'\(subscription.stored)'", "NULL"), (android, "NULL", "'f1:APA91b-token'"), (apns, "NULL", "NULL")] {
            script += """
                INSERT INTO devices (app, token, hash, kind, status, created_at, updated_at, web_push, fcm_token)
                VALUES ('\(app)', '\(id)', \(KeySpace.hash(id)), 0, 0, 1, 1, \(webPush), \(fcm));\n
                """
        }
        // A notification queued to all three, its deliveries pending.
        let stored = backend == .sqlite ? "X'7B7D'" : "'\\x7b7d'::bytea"
        let id = "01900000-0000-7000-8000-000000000004"
        script += """
            INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, badge_mode, status, targeted, deadline, created_at, web_push, fcm)
            VALUES ('\(id)', '\(app)', 0, '', \(stored), 'alert', 0, 0, 3, 9999999999999, 1, '\(Self.webPushOptions)', '\(Self.fcmOptions)');\n
            """
        for device in [browser, android, apns] {
            script += "INSERT INTO deliveries (notification_id, token, state, next_attempt_at) VALUES ('\(id)', '\(device)', 0, 0);\n"
        }
        try await RawDatabase(backend: backend, url: url).execute(script)

        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in
            try await store.checkReady()
            let expected: [String: DevicePlatform] = [browser: .webpush, android: .fcm, apns: .apns]
            // Its options for browsers and Android devices, from their two columns into one.
            let request = try #require(try await store.notification(id: id)?.request)
            #expect(request.webPush == Array(Self.webPushOptions.utf8) && request.fcm == Array(Self.fcmOptions.utf8))
            let batches = try await claimAll(store)
            #expect(batches.allSatisfy { $0.notification.webPush == Array(Self.webPushOptions.utf8) && $0.notification.fcm == Array(Self.fcmOptions.utf8) })
            let queued = batches.flatMap(\.items)
            #expect(Dictionary(uniqueKeysWithValues: queued.map { ($0.token, $0.platform) }) == expected, "deliveries queued before")
            // A broadcast after: its ranges read each device's stored platform.
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            let broadcast = try await claimAll(store).flatMap(\.items)
            #expect(Dictionary(uniqueKeysWithValues: broadcast.map { ($0.token, $0.platform) }) == expected, "a broadcast's ranges")
            // Their addresses, from the columns of before into the one address column.
            #expect(try await store.addresses(WebPushAddress.self, app: app, tokens: [browser, android, apns]) == [browser: subscription])
            #expect(try await store.addresses(FCMAddress.self, app: app, tokens: [browser, android, apns]) == [android: try FCMAddress(registrationToken: "f1:APA91b-token")])
            #expect(try await store.device(app: app, token: browser)?.webPush == subscription)
            #expect(try await store.device(app: app, token: android)?.fcm?.registrationToken == "f1:APA91b-token")
            #expect(try await store.device(app: app, token: apns)?.address == nil)
        }
    }

    /// A notification's options as an earlier Herald stored them, with what JSON escapes.
    static let webPushOptions = #"{"navigate": "https://example.com/a?b=\"c\"", "title": "Ünïcode ✓"}"#
    static let fcmOptions = #"{"android": {"priority": "high"}}"#

    /// The migration that stores platforms (counts per platform, each device's and delivery's):
    /// the tests start from the schema just before it.
    static func platformsMigration(_ migrations: [[String]]) throws -> Int {
        try #require(migrations.firstIndex { $0.contains { $0.contains("CREATE TABLE notification_platforms") } })
    }
}
