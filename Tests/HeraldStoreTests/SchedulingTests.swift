import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Scheduled, local-time, quiet-hours and paced delivery in the queue, on both backends, on a
/// test's clock: every claim is made at a time the test names, so no test waits for real hours.
@Suite("Scheduled delivery", .timeLimit(.minutes(6)))
struct SchedulingTests {
    /// 2026-11-26T01:00:00Z: Tokyo is at 10:00, Berlin at 02:00, New York at 20:00 the day before.
    static let night = Date(timeIntervalSince1970: 1_795_654_800)

    static func at(_ text: String) -> Date {
        try! Date.ISO8601FormatStyle().parse(text)
    }

    static func request(_ audience: Audience, _ schedule: DeliverySchedule?, expiration: PushExpiration? = nil) -> NotificationRequest {
        var request = NotificationRequest(app: app, audience: audience, payload: payload, expiration: expiration)
        request.schedule = schedule
        return request
    }

    static func zoned(_ number: Int, zone: String?) throws -> DeviceRegistration {
        var registration = try DeviceRegistration(token: token(number))
        try registration.setTimeZone(zone)
        return registration
    }

    /// Claims at `now` until nothing is due, accepting everything; the tokens sent.
    static func sent(_ store: HeraldStore, at now: Date) async throws -> Set<String> {
        Set(try await deliverAll(store, limit: 50, now: now))
    }

    @Test("sendAt: nothing is claimed before it, everything at it; the status is scheduled until then", arguments: Backend.allCases)
    func sendAt(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<40 { try await store.register(try registration(number), app: app) }
            let now = Date()
            let later = now.addingTimeInterval(3600)
            let targeted = try await store.enqueue(Self.request(.tokens([token(1), token(2)]), DeliverySchedule(sendAt: later)), now: now).notification
            let broadcast = try await store.enqueue(Self.request(.all, DeliverySchedule(sendAt: later)), now: now).notification
            #expect(targeted.status == .scheduled && broadcast.status == .scheduled)
            #expect(try await store.notification(id: broadcast.id)?.status == .scheduled)
            #expect(try await store.notifications(app: app, status: .scheduled).items.count == 2)
            #expect(try await store.notifications(app: app, status: .queued).items.isEmpty)

            #expect(try await Self.sent(store, at: now.addingTimeInterval(3599)).isEmpty)
            let sent = try await deliverAll(store, limit: 50, now: later.addingTimeInterval(1))
            #expect(sent.count == 42, "two targeted, forty in the broadcast, each once")
            #expect(Set(sent) == Set((0..<40).map(token)))
            for id in [targeted.id, broadcast.id] { #expect(try await store.notification(id: id)?.status == .done) }
        }
    }

    @Test("a sendAt in the past sends at once", arguments: Backend.allCases)
    func sendAtPast(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1), app: app)
            let now = Date()
            let queued = try await store.enqueue(Self.request(.tokens([token(1)]), DeliverySchedule(sendAt: now.addingTimeInterval(-60))), now: now).notification
            #expect(queued.status == .queued)
            #expect(try await Self.sent(store, at: now) == [token(1)])
        }
    }

    @Test("cancel while scheduled: nothing is sent, every device fails as cancelled", arguments: Backend.allCases)
    func cancelScheduled(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<10 { try await store.register(try registration(number), app: app) }
            let now = Date()
            let later = now.addingTimeInterval(600)
            let targeted = try await store.enqueue(Self.request(.tokens((0..<5).map(token)), DeliverySchedule(sendAt: later)), now: now).notification
            let broadcast = try await store.enqueue(Self.request(.all, DeliverySchedule(sendAt: later)), now: now).notification
            let cancelled = try #require(try await store.cancel(id: targeted.id, now: now))
            #expect(cancelled.status == .cancelled && cancelled.counts.failed == 5)
            #expect(try await store.cancel(id: broadcast.id, now: now)?.status == .cancelled)
            #expect(try await Self.sent(store, at: later.addingTimeInterval(1)).isEmpty)
        }
    }

    @Test("local time: each device at the next 09:00 in its own time zone, the app's zone for those without one", arguments: Backend.allCases)
    func localTime(backend: Backend) async throws {
        try await withStore(backend) { store in
            let zones = [1: "Asia/Tokyo", 2: "Europe/Berlin", 3: "America/New_York", 4: nil, 5: "Asia/Kolkata"]
            for (number, zone) in zones { try await store.register(try Self.zoned(number, zone: zone), app: app) }
            let schedule = DeliverySchedule(localTime: TimeOfDay("09:00"), defaultTimeZone: "UTC")
            // 09:00 in each zone after 2026-11-26T01:00Z: Berlin (UTC+1) 08:00Z, Kolkata (UTC+5:30)
            // 03:30Z, UTC 09:00Z, New York (UTC-5) 14:00Z, Tokyo (UTC+9, already 10:00) the next day.
            let expected: [(String, Int)] = [
                ("2026-11-26T03:30:00Z", 5), ("2026-11-26T08:00:00Z", 2), ("2026-11-26T09:00:00Z", 4), ("2026-11-26T14:00:00Z", 3),
                ("2026-11-27T00:00:00Z", 1),
            ]
            for audience in [Audience.tokens((1...5).map(token)), .all] {
                let queued = try await store.enqueue(Self.request(audience, schedule), now: Self.night).notification
                #expect(try await Self.sent(store, at: Self.night).isEmpty, "\(audience): none at 01:00Z")
                for (time, number) in expected {
                    let due = Self.at(time)
                    #expect(try await Self.sent(store, at: due.addingTimeInterval(-1)).isEmpty, "\(audience): none a second before \(time)")
                    #expect(try await Self.sent(store, at: due) == [token(number)], "\(audience): device \(number) at \(time)")
                }
                let done = try #require(try await store.notification(id: queued.id))
                #expect(done.status == .done && done.counts.accepted == 5, "\(audience)")
            }
        }
    }

    @Test("quiet hours: a device inside them is held until they end in its own time zone; one outside is sent", arguments: Backend.allCases)
    func quietHours(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try Self.zoned(1, zone: "Europe/Berlin"), app: app)
            try await store.register(try Self.zoned(2, zone: "America/New_York"), app: app)
            // 22:30Z: Berlin 23:30 (quiet), New York 17:30.
            let evening = Self.at("2026-11-26T22:30:00Z")
            let quiet = QuietHours(start: TimeOfDay("22:00")!, end: TimeOfDay("08:00")!)
            for audience in [Audience.tokens([token(1), token(2)]), .all] {
                _ = try await store.enqueue(Self.request(audience, DeliverySchedule(quietHours: quiet)), now: evening)
                #expect(try await Self.sent(store, at: evening) == [token(2)], "\(audience)")
                // Berlin's 08:00 is 07:00Z.
                #expect(try await Self.sent(store, at: Self.at("2026-11-27T06:59:59Z")).isEmpty, "\(audience)")
                #expect(try await Self.sent(store, at: Self.at("2026-11-27T07:00:00Z")) == [token(1)], "\(audience)")
            }
        }
    }

    @Test("an expiration that passes while scheduled or held ends the devices failed as Expired, never sent late", arguments: Backend.allCases)
    func expiresWhileScheduled(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<20 { try await store.register(try Self.zoned(number, zone: "Europe/Berlin"), app: app) }
            let now = Date()
            let expiration = PushExpiration.at(Date(timeIntervalSince1970: (now.timeIntervalSince1970 + 30).rounded(.down)))
            let later = DeliverySchedule(sendAt: now.addingTimeInterval(60))
            let targeted = try await store.enqueue(Self.request(.tokens((0..<5).map(token)), later, expiration: expiration), now: now).notification
            let broadcast = try await store.enqueue(Self.request(.all, later, expiration: expiration), now: now).notification
            #expect(try await Self.sent(store, at: now.addingTimeInterval(61)).isEmpty)
            let ended = try #require(try await store.notification(id: targeted.id))
            #expect(ended.status == .done && ended.counts.failed == 5 && ended.counts.accepted == 0)
            #expect(try await store.deliveries(notificationID: targeted.id, outcome: .failed).items.allSatisfy { $0.reason == "Expired" })
            #expect(try await store.notification(id: broadcast.id)?.status == .done)

            // Held by quiet hours past its expiration: found at the expiration, and failed.
            let evening = Self.at("2026-11-26T22:30:00Z")
            let held = DeliverySchedule(quietHours: QuietHours(start: TimeOfDay("22:00")!, end: TimeOfDay("08:00")!))
            let short = PushExpiration.at(evening.addingTimeInterval(3600))
            let quiet = try await store.enqueue(Self.request(.tokens([token(1)]), held, expiration: short), now: evening).notification
            #expect(try await Self.sent(store, at: evening).isEmpty)
            #expect(try await Self.sent(store, at: evening.addingTimeInterval(3600)).isEmpty)
            let failed = try #require(try await store.notification(id: quiet.id))
            #expect(failed.status == .done && failed.counts.failed == 1)
        }
    }

    @Test("pacing: devices fall due evenly at the rate; an app's ceiling makes its notifications take turns", arguments: Backend.allCases)
    func pacing(backend: Backend) async throws {
        try await withStore(backend) { store in
            for number in 0..<200 { try await store.register(try registration(number), app: app) }
            let now = Date()
            for audience in [Audience.tokens((0..<200).map(token)), .all] {
                _ = try await store.enqueue(Self.request(audience, DeliverySchedule(ratePerSecond: 20)), now: now)
                // 200 devices at 20 a second: about 20 more each second, all by 10 s.
                var total = 0
                for second in 0...10 {
                    let count = try await Self.sent(store, at: now.addingTimeInterval(Double(second))).count
                    #expect(count <= 40, "\(audience): \(count) due in second \(second)")
                    total += count
                }
                #expect(total == 200, "\(audience)")
            }
            // A ceiling shared by the app's sends: the second's window starts where the first's ends.
            let start = now.addingTimeInterval(100)
            var ceiling = DeliverySchedule(ratePerSecond: 50)
            ceiling.sharesAppPace = true
            _ = try await store.enqueue(Self.request(.all, ceiling), now: start)
            _ = try await store.enqueue(Self.request(.tokens([token(7)]), ceiling), now: start)
            let first = try await Self.sent(store, at: start.addingTimeInterval(3.9))
            #expect(first.count >= 150 && first.count < 200, "the first broadcast's window runs 4 s")
            #expect(try await Self.sent(store, at: start.addingTimeInterval(4.1)).count == 200 - first.count + 1, "then the second")

            // A pace holds only its own devices: another app's notification goes at once.
            let later = start.addingTimeInterval(100)
            _ = try await store.enqueue(Self.request(.all, DeliverySchedule(ratePerSecond: 1)), now: later)
            try await store.register(try registration(900), app: "other")
            _ = try await store.enqueue(NotificationRequest(app: "other", audience: .tokens([token(900)]), payload: payload), now: later)
            let sent = try await Self.sent(store, at: later)
            #expect(sent.contains(token(900)) && sent.count <= 3, "\(sent.count)")
        }
    }

    @Test("the schedule's rules as values: times of day, time zones, quiet hours over midnight")
    func values() throws {
        #expect(TimeOfDay("09:00")?.minutes == 540)
        #expect(TimeOfDay("23:59")?.description == "23:59")
        for bad in ["25:00", "9:00", "12:60", "", "09:00:00", "ab:cd", "-1:00"] { #expect(TimeOfDay(bad) == nil, "\(bad)") }
        #expect(DeliverySchedule.isTimeZone("Europe/Paris") && DeliverySchedule.isTimeZone("UTC"))
        for bad in ["Mars/Olympus", "CET", "EST", "", "../etc/passwd", "Europe/Paris\n", String(repeating: "A/", count: 40)] {
            #expect(!DeliverySchedule.isTimeZone(bad), "\(bad)")
        }
        let quiet = QuietHours(start: TimeOfDay("22:00")!, end: TimeOfDay("08:00")!)
        let utc = try #require(TimeZone(identifier: "UTC"))
        #expect(quiet.contains(Self.at("2026-11-26T23:00:00Z"), in: utc))
        #expect(quiet.contains(Self.at("2026-11-26T07:59:00Z"), in: utc))
        #expect(!quiet.contains(Self.at("2026-11-26T08:00:00Z"), in: utc))
        // Clocks went forward over 02:30 in Berlin on 2026-03-29: the moment they did.
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let gap = TimeOfDay("02:30")!.next(atOrAfter: Self.at("2026-03-29T00:00:00Z"), in: berlin)
        #expect(gap >= Self.at("2026-03-29T01:00:00Z") && gap <= Self.at("2026-03-29T01:30:00Z"))
    }
}
