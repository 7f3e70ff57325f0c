import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The device registry, on both backends: registration, listing, pruning by APNs's rules.
@Suite("Device registry", .timeLimit(.minutes(6)))
struct DeviceRegistryTests {
    @Test("register, register again, read and delete: nil keeps, a value replaces, tokens are lower case", arguments: Backend.allCases)
    func registerAndRead(backend: Backend) async throws {
        try await withStore(backend) { store in
            let t0 = Date(timeIntervalSince1970: 1_700_000_000)
            let upper = String(repeating: "AB", count: 32)
            let (first, created) = try await store.register(
                try DeviceRegistration(token: upper, user: "u1", tags: ["beta", "ios"], badge: 3), app: app, now: t0
            )
            #expect(created)
            #expect(first.token == upper.lowercased())
            #expect(first.user == "u1" && first.tags == ["beta", "ios"] && first.badge == 3 && first.status == .active)
            #expect(first.createdAt == t0 && first.updatedAt == t0)

            // Again, later, with only a badge: the rest is kept; updatedAt moves.
            let t1 = t0.addingTimeInterval(60)
            let (second, createdAgain) = try await store.register(try DeviceRegistration(token: upper, badge: 0), app: app, now: t1)
            #expect(!createdAgain)
            #expect(second.user == "u1" && second.tags == ["beta", "ios"] && second.badge == 0)
            #expect(second.createdAt == t0 && second.updatedAt == t1)

            // Clearing the user and the tags.
            let (third, _) = try await store.register(try DeviceRegistration(token: upper, user: .some(nil), tags: []), app: app, now: t1)
            #expect(third.user == nil && third.tags.isEmpty)
            #expect(try await store.device(app: app, token: upper)?.tags.isEmpty == true)
            #expect(try await store.devices(app: app, filter: DeviceFilter(tag: "beta")).items.isEmpty)

            // Another app is another registry.
            #expect(try await store.device(app: "other", token: upper) == nil)
            #expect(try await store.deleteDevice(app: app, token: upper))
            #expect(try await !store.deleteDevice(app: app, token: upper))
            #expect(try await store.device(app: app, token: upper) == nil)
        }
    }

    @Test("bad input is refused with what is wrong")
    func badInput() throws {
        #expect(throws: StoreError.self) { try DeviceRegistration(token: "xyz") }
        let bad = #expect(throws: StoreError.self) { try DeviceRegistration(token: token(1), tags: ["no spaces"]) }
        #expect(bad?.message.contains("tags") == true)
        #expect(throws: StoreError.self) { try DeviceRegistration(token: token(1), badge: -1) }
        #expect(throws: StoreError.self) { try DeviceRegistration(token: token(1), user: .some("bell\u{7}")) }
        #expect(throws: StoreError.self) { try DeviceRegistration(token: token(1), tags: Set((0..<33).map { "t\($0)" })) }
        #expect(throws: StoreError.self) { try StoreURL("mysql://x") }
        let noDatabase = #expect(throws: StoreError.self) { try StoreURL("postgres://u:secret@host:5432/") }
        #expect(noDatabase?.message.contains("secret") == false, "the password never appears")
        #expect(try StoreURL("postgres://u:secret@host:5432/db").description == "postgres://u:***@host:5432/db")
    }

    @Test("list by status, user and tag, a page at a time in the store's order; count", arguments: Backend.allCases)
    func listing(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<25 {
                try await store.register(try registration(number, user: .some(number % 2 == 0 ? "even" : "odd"), tags: number % 5 == 0 ? ["five"] : []), app: app)
            }
            _ = try await store.recordFeedback(app: app, [(token(3), Date().addingTimeInterval(60))])
            var seen: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try await store.devices(app: app, limit: 10, after: cursor)
                seen += page.items.map(\.token)
                cursor = page.next
                if cursor == nil { break }
            }
            // SQLite keeps devices by a hash of the token, PostgreSQL by token: pages of 10
            // follow the order of one page of all, and list every device once.
            let all = try await store.devices(app: app, limit: 100).items.map(\.token)
            #expect(seen == all, "pages continue where the last one ended")
            #expect(seen.sorted() == (0..<25).map(token), "every device once")
            if backend == .postgres { #expect(seen == (0..<25).map(token), "PostgreSQL lists by token") }
            #expect(try await store.devices(app: app, filter: DeviceFilter(user: "even"), limit: 100).items.count == 13)
            #expect(try await store.devices(app: app, filter: DeviceFilter(tag: "five"), limit: 100).items.map(\.token).sorted() == [0, 5, 10, 15, 20].map(token))
            #expect(try await store.devices(app: app, filter: DeviceFilter(status: .unregistered), limit: 100).items.map(\.token) == [token(3)])
            #expect(try await store.devices(app: app, filter: DeviceFilter(status: .active, user: "odd", tag: "five"), limit: 100).items.map(\.token).sorted() == [5, 15].map(token))
            #expect(try await store.countDevices(app: app) == 25)
            #expect(try await store.countDevices(app: app, status: .active) == 24)
        }
    }

    @Test("a bulk import of bare tokens and of full registrations: a bare token keeps what is stored and is active again, a field given replaces", arguments: Backend.allCases)
    func bulkBareAndFull(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<4 {
                try await store.register(try registration(number, user: .some("user-\(number)"), tags: ["old"], badge: 3), app: app)
            }
            _ = try await store.recordFeedback(app: app, [(token(1), Date().addingTimeInterval(60))])
            #expect(try await store.device(app: app, token: token(1))?.status == .unregistered)
            // 0 and 1 bare, 2 with a new user, 3 with new tags, 4 and 5 new (bare and full).
            let batch = [
                try registration(0), try registration(1), try registration(2, user: .some("user-new")), try registration(3, tags: ["new"]),
                try registration(4), try registration(5, badge: 7),
            ]
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for registration in batch { continuation.yield(registration) }
                continuation.finish()
            }
            #expect(try await store.register(contentsOf: stream, app: app) == 6)
            var devices: [Device] = []
            for number in 0..<6 { devices.append(try #require(try await store.device(app: app, token: token(number)))) }
            #expect(devices[0].user == "user-0" && devices[0].tags == ["old"] && devices[0].badge == 3 && devices[0].status == .active)
            #expect(devices[1].user == "user-1" && devices[1].tags == ["old"] && devices[1].badge == 3 && devices[1].status == .active, "a bare token reactivates")
            #expect(devices[2].user == "user-new" && devices[2].tags == ["old"])
            #expect(devices[3].user == "user-3" && devices[3].tags == ["new"] && devices[3].badge == 3)
            #expect(devices[4].user == nil && devices[4].tags == [] && devices[4].badge == 0 && devices[4].status == .active)
            #expect(devices[5].badge == 7)
            #expect(try await store.devices(app: app, filter: DeviceFilter(tag: "old"), limit: 10).items.map(\.token).sorted() == [0, 1, 2].map(token))
            #expect(try await store.countDevices(app: app) == 6)
        }
    }

    @Test("5,000 devices of one batch gone at once (a stale registry): every one retired by its own timestamp, the rest untouched", arguments: Backend.allCases)
    func manyGoneAtOnce(backend: Backend) async throws {
        try await withStore(backend) { store in
            let count = 5000
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for number in 0...count { continuation.yield(try! registration(number)) }
                continuation.finish()
            }
            try await store.register(contentsOf: stream, app: app)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            let later = Date().addingTimeInterval(60)
            var retired = 0
            for batch in try await claimAll(store, limit: count + 1) {
                // Every device but number 0 is gone, with a timestamp after it registered.
                let outcomes = batch.items.map { item in
                    DeliveryOutcome(token: item.token, result: item.token == token(0) ? .accepted(receipt: nil) : .rejected(reason: .apns(.unregistered), timestamp: later))
                }
                retired += outcomes.count - (batch.items.contains { $0.token == token(0) } ? 1 : 0)
                try await store.complete(batch, outcomes: outcomes)
            }
            #expect(retired == count)
            #expect(try await store.countDevices(app: app, status: .unregistered) == count)
            #expect(try await store.device(app: app, token: token(0))?.status == .active)
            #expect(try await store.device(app: app, token: token(4321))?.invalidatedAt.map { abs($0.timeIntervalSince(later)) < 0.01 } == true)
        }
    }

    @Test("100,000 devices in one streamed call", arguments: Backend.allCases)
    func bulkRegistration(backend: Backend) async throws {
        try await withStore(backend) { store in
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for number in 0..<100_000 {
                    continuation.yield(try! registration(number, user: .some("u\(number % 1000)"), tags: number % 10 == 0 ? ["tenth"] : nil))
                }
                continuation.finish()
            }
            let count = try await store.register(contentsOf: stream, app: app)
            #expect(count == 100_000)
            #expect(try await store.countDevices(app: app) == 100_000)
            #expect(try await store.device(app: app, token: token(99_990))?.tags == ["tenth"])
            #expect(try await store.devices(app: app, filter: DeviceFilter(user: "u7"), limit: 1000).items.count == 100)
        }
    }

    /// Batches are written while the next is read; a stream that fails midway still leaves every
    /// batch read before the failure written (as when they were written in turn), and the error
    /// reaches the caller.
    @Test("a streamed registration that fails midway: the batches read before it are written, the error is thrown", arguments: Backend.allCases)
    func bulkRegistrationFailing(backend: Backend) async throws {
        struct Cut: Error {}
        try await withStore(backend) { store async throws in
            let stream = AsyncThrowingStream<DeviceRegistration, any Error> { continuation in
                for number in 0..<2_500 { continuation.yield(try! registration(number)) }
                continuation.finish(throwing: Cut())
            }
            await #expect(throws: Cut.self) { try await store.register(contentsOf: stream, app: app, batchSize: 1000) }
            // Two whole batches; the half batch being read when the stream failed is not.
            #expect(try await store.countDevices(app: app) == 2000)
            #expect(try await store.device(app: app, token: token(1999)) != nil)
            #expect(try await store.device(app: app, token: token(2000)) == nil)
        }
    }

    @Test("410 Unregistered with timestamp T ends a device only if T is not before its last registration (both ways)", arguments: Backend.allCases)
    func timestampRule(backend: Backend) async throws {
        try await withStore(backend) { store in
            let registered = Date(timeIntervalSince1970: 1_700_000_000)
            try await store.register(try registration(1), app: app, now: registered)
            try await store.register(try registration(2), app: app, now: registered)
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(1), token(2)]), payload: payload), now: registered)
            let batch = try #require(try await store.claim(owner: "w", now: registered).first)
            // Device 1: APNs saw the token go an hour *before* it registered: it registered again, keep it.
            // Device 2: an hour after: it is gone.
            try await store.complete(batch, outcomes: [
                DeliveryOutcome(token: token(1), result: .rejected(reason: "Unregistered", timestamp: registered.addingTimeInterval(-3600))),
                DeliveryOutcome(token: token(2), result: .rejected(reason: "Unregistered", timestamp: registered.addingTimeInterval(3600))),
            ], now: registered)
            #expect(try await store.device(app: app, token: token(1))?.status == .active)
            let gone = try #require(try await store.device(app: app, token: token(2)))
            #expect(gone.status == .unregistered && gone.reason == "Unregistered")
            #expect(gone.invalidatedAt == registered.addingTimeInterval(3600))

            // Feedback tuples follow the same rule.
            try await store.register(try registration(3), app: app, now: registered)
            try await store.register(try registration(4), app: app, now: registered)
            let changed = try await store.recordFeedback(app: app, [(token(3), registered.addingTimeInterval(-1)), (token(4), registered)])
            #expect(changed == 1)
            #expect(try await store.device(app: app, token: token(3))?.status == .active)
            #expect(try await store.device(app: app, token: token(4))?.status == .unregistered)

            // Registering again makes it active, whatever it was.
            let back = try await store.register(try registration(2), app: app, now: registered.addingTimeInterval(7200)).device
            #expect(back.status == .active && back.reason == nil && back.invalidatedAt == nil)
        }
    }

    @Test("BadDeviceToken and DeviceTokenNotForTopic make a device invalid; other reasons leave it", arguments: Backend.allCases)
    func invalidReasons(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 1...3 { try await store.register(try registration(number), app: app) }
            _ = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([1, 2, 3].map(token)), payload: payload))
            let batch = try #require(try await store.claim(owner: "w").first)
            try await store.complete(batch, outcomes: [
                DeliveryOutcome(token: token(1), result: .rejected(reason: "BadDeviceToken", timestamp: nil)),
                DeliveryOutcome(token: token(2), result: .rejected(reason: "DeviceTokenNotForTopic", timestamp: nil)),
                DeliveryOutcome(token: token(3), result: .rejected(reason: "PayloadTooLarge", timestamp: nil)),
            ])
            #expect(try await store.device(app: app, token: token(1))?.status == .invalid)
            #expect(try await store.device(app: app, token: token(1))?.reason == "BadDeviceToken")
            #expect(try await store.device(app: app, token: token(2))?.status == .invalid)
            #expect(try await store.device(app: app, token: token(3))?.status == .active)
        }
    }
}
