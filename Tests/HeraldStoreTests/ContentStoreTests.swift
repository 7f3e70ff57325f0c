import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// What people want to get, in the store, on both databases: templates and their versions,
/// users' and devices' choices per category, the devices a batch is not sent (opted out, over a
/// frequency cap, folded into a digest) and how those end, counted and listed.
@Suite("Templates, preferences, frequency caps and digests in the store", .timeLimit(.minutes(6)))
struct ContentStoreTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Templates

    @Test("a template is stored at version 1, replaced at version 2, read, listed a page at a time and deleted; a bad name is refused", arguments: Backend.allCases)
    func templates(backend: Backend) async throws {
        try await withStore(backend) { store in
            let first = try await store.putTemplate(app: app, name: "order.shipped", body: Array(#"{"title":"Shipped"}"#.utf8), now: Self.start)
            #expect(first.version == 1 && first.name == "order.shipped" && first.updatedAt == Self.start)
            let body = Array(#"{"title":"Your order is on its way","locales":{"pt-BR":{"title":"A caminho"}}}"#.utf8)
            let second = try await store.putTemplate(app: app, name: "order.shipped", body: body, now: Self.start.addingTimeInterval(5))
            #expect(second.version == 2)
            let read = try #require(try await store.template(app: app, name: "order.shipped"))
            #expect(read.version == 2 && read.body == body && read.app == app && read.updatedAt == Self.start.addingTimeInterval(5))
            #expect(try await store.putTemplate(app: "other", name: "order.shipped", body: [0x7B, 0x7D], now: Self.start).version == 1, "each app has its own")
            #expect(try await store.template(app: app, name: "missing") == nil)

            for name in ["alpha", "beta", "zeta"] { _ = try await store.putTemplate(app: app, name: name, body: [0x7B, 0x7D], now: Self.start) }
            let page1 = try await store.templates(app: app, limit: 2)
            #expect(page1.items.map(\.name) == ["alpha", "beta"] && page1.next == "beta", "by name")
            let page2 = try await store.templates(app: app, limit: 2, after: page1.next)
            #expect(page2.items.map(\.name) == ["order.shipped", "zeta"] && page2.next == nil)
            #expect(page2.items.first?.version == 2)

            #expect(try await store.deleteTemplate(app: app, name: "order.shipped"))
            #expect(try await store.template(app: app, name: "order.shipped") == nil)
            #expect(try await !store.deleteTemplate(app: app, name: "order.shipped"), "gone already")
            #expect(try await store.templates(app: app).items.map(\.name) == ["alpha", "beta", "zeta"])
            #expect(try await store.template(app: "other", name: "order.shipped")?.version == 1, "the other app's stays")
            // Stored again after a delete: a new template, version 1.
            #expect(try await store.putTemplate(app: app, name: "order.shipped", body: body).version == 1)

            for name in ["", "has space", "slash/name", "ünïcode", String(repeating: "a", count: 65)] {
                let refused = await #expect(throws: StoreError.self, "\(name)") { try await store.putTemplate(app: app, name: name, body: body) }
                #expect(refused?.code == .invalidInput)
                #expect(try await store.template(app: app, name: name) == nil)
            }
            #expect(try await store.putTemplate(app: app, name: String(repeating: "a", count: 64), body: body).version == 1, "64 is the longest name")
        }
    }

    // MARK: Preferences

    @Test("a user's choices come back as set, for every platform and per platform; setting them again replaces them all", arguments: Backend.allCases)
    func preferences(backend: Backend) async throws {
        try await withStore(backend) { store in
            let none = try await store.preferences(app: app, user: "ann")
            #expect(none.user == "ann" && none.categories.isEmpty && none.updatedAt == nil)

            let choices: [String: UserPreferences.Choice] = [
                "marketing": .init(all: false, platforms: [.webpush: true]),
                "orders": .init(platforms: [.apns: false, .fcm: true]),
                "news": .init(all: true),
            ]
            try await store.setPreferences(UserPreferences(user: "ann", categories: choices), app: app, now: Self.start)
            let read = try await store.preferences(app: app, user: "ann")
            #expect(read.categories == choices)
            #expect(read.updatedAt == Self.start)
            #expect(try await store.preferences(app: "other", user: "ann").categories.isEmpty, "per app")
            #expect(try await store.preferences(app: app, user: "bob").categories.isEmpty, "per user")

            try await store.setPreferences(UserPreferences(user: "ann", categories: ["digest": .init(all: false)]), app: app, now: Self.start.addingTimeInterval(9))
            let replaced = try await store.preferences(app: app, user: "ann")
            #expect(replaced.categories == ["digest": .init(all: false)], "the old choices are gone")
            #expect(replaced.updatedAt == Self.start.addingTimeInterval(9))

            try await store.setPreferences(UserPreferences(user: "ann", categories: [:]), app: app)
            #expect(try await store.preferences(app: app, user: "ann").categories.isEmpty, "none: cleared")

            let badCategory = await #expect(throws: StoreError.self) {
                try await store.setPreferences(UserPreferences(user: "ann", categories: ["Marketing": .init(all: false)]), app: app)
            }
            #expect(badCategory?.code == .invalidInput)
            let badUser = await #expect(throws: StoreError.self) { try await store.setPreferences(UserPreferences(user: "", categories: [:]), app: app) }
            #expect(badUser?.code == .invalidInput)
        }
    }

    @Test("a device's language and own choices are stored, kept by a bare registration, and cleared by an empty value; a bad locale is refused", arguments: Backend.allCases)
    func deviceLocaleAndPreferences(backend: Backend) async throws {
        try await withStore(backend) { store in
            var registration = try DeviceRegistration(token: token(1), user: "ann")
            try registration.setLocale("pt-BR")
            try registration.setPreferences(["marketing": false, "orders": true])
            let registered = try await store.register(registration, app: app).device
            #expect(registered.locale == "pt-BR" && registered.preferences == ["marketing": false, "orders": true])
            var read = try #require(try await store.device(app: app, token: token(1)))
            #expect(read.locale == "pt-BR" && read.preferences == ["marketing": false, "orders": true])

            try await store.register(try DeviceRegistration(token: token(1)), app: app)
            read = try #require(try await store.device(app: app, token: token(1)))
            #expect(read.locale == "pt-BR" && read.preferences == ["marketing": false, "orders": true] && read.user == "ann", "a bare registration keeps them")

            var changed = try DeviceRegistration(token: token(1), tags: ["beta"])
            try changed.setPreferences(["marketing": true])
            try await store.register(changed, app: app)
            read = try #require(try await store.device(app: app, token: token(1)))
            #expect(read.locale == "pt-BR" && read.preferences == ["marketing": true], "new choices replace the old; the language stays")

            var cleared = try DeviceRegistration(token: token(1))
            try cleared.setLocale("")
            try await store.register(cleared, app: app)
            read = try #require(try await store.device(app: app, token: token(1)))
            #expect(read.locale == nil && read.preferences == ["marketing": true], "\"\" clears the language only")

            var noChoices = try DeviceRegistration(token: token(1))
            try noChoices.setPreferences([:])
            try await store.register(noChoices, app: app)
            #expect(try await store.device(app: app, token: token(1))?.preferences == [:])

            var probe = try DeviceRegistration(token: token(2))
            for tag in ["en", "pt_BR", "zh-Hant-TW", "es-419"] { #expect(throws: Never.self, "\(tag)") { try probe.setLocale(tag) } }
            for tag in ["e", "english", "pt-", "pt BR", "12-US", "en-abcdefghi", "fr-FR;", String(repeating: "a-", count: 18) + "a"] {
                let error = #expect(throws: StoreError.self, "\(tag)") { try probe.setLocale(tag) }
                #expect(error?.code == .invalidInput)
            }
            for choices in [["Marketing": false], ["": true], ["a b": true]] {
                let error = #expect(throws: StoreError.self, "\(choices)") { try probe.setPreferences(choices) }
                #expect(error?.code == .invalidInput)
            }
            #expect(try await store.device(app: app, token: token(2)) == nil, "nothing registered")
        }
    }

    // MARK: Screening for preferences

    @Test("screening skips exactly the devices that opted out; a transactional category skips none; traits carry user and language", arguments: Backend.allCases)
    func screeningOptOut(backend: Backend) async throws {
        try await withStore(backend) { store in
            // ann: out of marketing everywhere. bob: out on browsers only (one browser, one
            // iPhone). carol: out everywhere, but one device of hers opted in itself. dave: no
            // choices. frank: opted in. A device without a user that opted out itself.
            try await store.setPreferences(UserPreferences(user: "ann", categories: ["marketing": .init(all: false)]), app: app)
            try await store.setPreferences(UserPreferences(user: "bob", categories: ["marketing": .init(all: true, platforms: [.webpush: false])]), app: app)
            try await store.setPreferences(UserPreferences(user: "carol", categories: ["marketing": .init(all: false), "orders": .init(all: true)]), app: app)
            try await store.setPreferences(UserPreferences(user: "frank", categories: ["marketing": .init(all: true)]), app: app)
            try await store.register(try registration(1, user: "ann"), app: app)
            let browser = try await store.register(
                try DeviceRegistration(
                    webPush: try WebPushAddress(endpoint: "https://push.example/bob", p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA", auth: "tBHItJI5svbpez7KI4CCXg"),
                    user: "bob"),
                app: app
            ).device.token
            try await store.register(try registration(3, user: "bob"), app: app)
            var carolsOwn = try DeviceRegistration(token: token(4), user: "carol")
            try carolsOwn.setPreferences(["marketing": true])
            try await store.register(carolsOwn, app: app)
            try await store.register(try registration(5, user: "carol"), app: app)
            var davesPhone = try DeviceRegistration(token: token(6), user: "dave")
            try davesPhone.setLocale("de-DE")
            try await store.register(davesPhone, app: app)
            var anonymous = try DeviceRegistration(token: token(7))
            try anonymous.setPreferences(["marketing": false])
            try await store.register(anonymous, app: app)
            try await store.register(try registration(9, user: "frank"), app: app)

            let tokens = [token(1), browser, token(3), token(4), token(5), token(6), token(7), token(9)]
            let notification = try await store.enqueue(Self.request(.tokens(tokens), content: NotificationContent(category: "marketing"))).notification
            let batch = try await Self.onlyBatch(of: notification.id, store: store)
            #expect(batch.notification.content == NotificationContent(category: "marketing"), "the claim carries the content")
            #expect(batch.items.first { $0.token == browser }?.platform == .webpush)

            let optOut = ScreeningRules(category: "marketing", receivesByDefault: true, honorsPreferences: true, caps: [])
            let screened = try await store.screen(batch, rules: optOut)
            #expect(screened.skipped == [token(1): .optedOut, browser: .optedOut, token(5): .optedOut, token(7): .optedOut])
            #expect(screened.digests.isEmpty)
            #expect(screened.traits[token(6)] == DeviceTraits(user: "dave", locale: "de-DE"))
            #expect(screened.traits[browser] == DeviceTraits(user: "bob", locale: nil))
            #expect(screened.traits[token(7)] == DeviceTraits(user: nil, locale: nil))
            #expect(Set(screened.traits.keys) == Set(tokens))

            let optIn = ScreeningRules(category: "marketing", receivesByDefault: false, honorsPreferences: true, caps: [])
            let receiving = Set(tokens).subtracting(try await store.screen(batch, rules: optIn).skipped.keys)
            #expect(receiving == [token(3), token(4), token(9)], "only those who opted in: bob's iPhone (bob: all), carol's own device, frank")
            #expect(try await store.screen(batch, rules: optIn).skipped.values.allSatisfy { $0 == .optedOut })

            let transactional = ScreeningRules(category: "marketing", receivesByDefault: true, honorsPreferences: false, caps: [])
            let everyone = try await store.screen(batch, rules: transactional)
            #expect(everyone.skipped.isEmpty)
            #expect(everyone.traits[token(6)] == DeviceTraits(user: "dave", locale: "de-DE"))
            #expect(try await store.screen(batch, rules: nil).skipped.isEmpty, "no rules: nothing screened")

            // Completed as the worker completes it: the opted-out devices end so, counted and listed.
            try await Self.complete(batch, screened, store: store)
            let done = try #require(try await store.notification(id: notification.id))
            #expect(done.status == .done && done.counts.pending == 0)
            #expect(done.counts.accepted == 4 && done.counts.skipped == [.optedOut: 4] && done.counts.failed == 0 && done.counts.rejected.isEmpty)
            let listed = try await store.deliveries(notificationID: notification.id, outcome: .optedOut).items
            #expect(Set(listed.map(\.token)) == [token(1), browser, token(5), token(7)])
            #expect(listed.allSatisfy { $0.outcome == .optedOut })
            #expect(try await store.deliveries(notificationID: notification.id).items.count == 8)
        }
    }

    // MARK: Frequency caps

    @Test("a cap of 2 in 600 s: a user's third notification is capped on every device, a retry gets the same answer, and the window slides", arguments: Backend.allCases)
    func caps(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1, user: "ann"), app: app)
            try await store.register(try registration(2, user: "ann"), app: app)
            try await store.register(try registration(3), app: app)
            let rules = ScreeningRules(category: "promo", receivesByDefault: true, honorsPreferences: true, caps: [FrequencyCap(count: 2, windowSeconds: 600)])
            let promo = NotificationContent(category: "promo")
            // ann's devices by user, then by token (with a device that has no user), then again.
            let audiences: [Audience] = [.users(["ann"]), .tokens([token(1), token(2), token(3)]), .tokens([token(1), token(2), token(3)]), .tokens([token(3)])]
            var ids: [String] = []
            for (index, audience) in audiences.enumerated() {
                ids.append(try await store.enqueue(Self.request(audience, content: promo), now: Self.start.addingTimeInterval(Double(index))).notification.id)
            }
            let at = Self.start.addingTimeInterval(10)
            let batches = try await claimAll(store, now: at)
            func batch(_ number: Int) throws -> WorkBatch { try #require(batches.first { $0.notification.id == ids[number] }) }
            #expect(batches.count == 4)

            let first = try await store.screen(try batch(0), rules: rules, now: at)
            #expect(first.skipped.isEmpty)
            #expect(try await store.screen(try batch(0), rules: rules, now: at).skipped.isEmpty, "a retry of the first is not counted again")
            let second = try await store.screen(try batch(1), rules: rules, now: at)
            #expect(second.skipped.isEmpty, "ann's second, the device's first")
            let third = try await store.screen(try batch(2), rules: rules, now: at)
            #expect(third.skipped == [token(1): .capped, token(2): .capped], "ann's third, on both her devices; the device without a user: its second")
            #expect(try await store.screen(try batch(2), rules: rules, now: at.addingTimeInterval(1)).skipped == third.skipped, "a retry: the same answer")
            #expect(try await store.screen(try batch(1), rules: rules, now: at.addingTimeInterval(1)).skipped.isEmpty, "a retry: the same answer")
            let fourth = try await store.screen(try batch(3), rules: rules, now: at)
            #expect(fourth.skipped == [token(3): .capped], "counted per device without a user")
            #expect(try await store.screen(try batch(3), rules: ScreeningRules(category: "other", receivesByDefault: true, honorsPreferences: true, caps: rules.caps), now: at)
                .skipped.isEmpty, "caps count per category")

            for (number, screened) in [first, second, third, fourth].enumerated() { try await Self.complete(try batch(number), screened, store: store, now: at) }
            for number in 0..<2 {
                let sent = try #require(try await store.notification(id: ids[number]))
                #expect(sent.status == .done && sent.counts.accepted == (number == 0 ? 2 : 3) && sent.counts.skipped.isEmpty)
            }
            let capped = try #require(try await store.notification(id: ids[2]))
            #expect(capped.status == .done && capped.counts.pending == 0)
            #expect(capped.counts.accepted == 1 && capped.counts.skipped == [.capped: 2] && capped.counts.targeted == 3)
            let rows = try await store.deliveries(notificationID: ids[2]).items
            #expect(rows.map(\.token) == [token(1), token(2), token(3)])
            #expect(rows.map(\.outcome) == [.capped, .capped, .accepted])
            #expect(try await store.deliveries(notificationID: ids[2], outcome: .capped).items.map(\.token) == [token(1), token(2)])
            #expect(try await store.notification(id: ids[3])?.counts.skipped == [.capped: 1])

            // The window slides: 599 s after the two counted, still capped; 600 s after, free again.
            var later: [String] = []
            for index in 0..<2 { later.append(try await store.enqueue(Self.request(.users(["ann"]), content: promo), now: at.addingTimeInterval(Double(500 + index))).notification.id) }
            let next = try await claimAll(store, now: at.addingTimeInterval(599))
            let almost = try #require(next.first { $0.notification.id == later[0] })
            let free = try #require(next.first { $0.notification.id == later[1] })
            #expect(try await store.screen(almost, rules: rules, now: at.addingTimeInterval(599)).skipped == [token(1): .capped, token(2): .capped])
            #expect(try await store.screen(free, rules: rules, now: at.addingTimeInterval(600)).skipped.isEmpty)
            #expect(try await store.screen(almost, rules: rules, now: at.addingTimeInterval(600)).skipped.count == 2, "its answer stays")
            for leftover in next { try await store.release(leftover) }
        }
    }

    // MARK: Broadcasts

    @Test("a broadcast counts its skipped devices, keeps no row of them, and ends with every device targeted", arguments: Backend.allCases)
    func broadcastSkips(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.setPreferences(UserPreferences(user: "ann", categories: ["promo": .init(all: false)]), app: app)
            for number in 1...3 { try await store.register(try registration(number, user: "ann"), app: app) }
            for number in 4...8 { try await store.register(try registration(number, user: "u\(number)"), app: app) }
            try await store.register(try registration(9), app: "other")
            let rules = ScreeningRules(category: "promo", receivesByDefault: true, honorsPreferences: true, caps: [FrequencyCap(count: 1, windowSeconds: 3600)])
            // u4 had its one promo already.
            let earlier = try await store.enqueue(Self.request(.users(["u4"]), content: NotificationContent(category: "promo")), now: Self.start).notification.id
            let first = try await Self.onlyBatch(of: earlier, store: store, now: Self.start)
            try await Self.complete(first, try await store.screen(first, rules: rules, now: Self.start), store: store, now: Self.start)

            let broadcast = try await store.enqueue(Self.request(.all, content: NotificationContent(category: "promo")), now: Self.start).notification
            #expect(broadcast.counts.targeted == 8)
            let batches = try await claimAll(store, now: Self.start.addingTimeInterval(1)).filter { $0.notification.id == broadcast.id }
            #expect(!batches.isEmpty && !batches.contains { $0.keepsAcceptanceIDs }, "read as key ranges")
            var skipped: [String: SkipReason] = [:]
            for batch in batches {
                let screened = try await store.screen(batch, rules: rules, now: Self.start.addingTimeInterval(1))
                skipped.merge(screened.skipped) { first, _ in first }
                try await Self.complete(batch, screened, store: store, now: Self.start.addingTimeInterval(1))
            }
            #expect(skipped == [token(1): .optedOut, token(2): .optedOut, token(3): .optedOut, token(4): .capped])
            let done = try #require(try await store.notification(id: broadcast.id))
            #expect(done.status == .done && done.counts.pending == 0)
            #expect(done.counts.targeted == 8 && done.counts.accepted == 4 && done.counts.skipped == [.optedOut: 3, .capped: 1])
            #expect(try await store.deliveries(notificationID: broadcast.id).items.isEmpty, "no row for a device not sent (nor for one accepted)")
        }
    }

    // MARK: Digests

    @Test("a digest: a later notification folds into the first, which is sent when the window ends with both items; one after opens a new digest", arguments: Backend.allCases)
    func digests(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1, user: "u1"), app: app)
            try await store.register(try registration(2, user: "u1"), app: app)
            try await store.register(try registration(3, user: "u2"), app: app)
            func digest(_ item: String) -> NotificationContent { NotificationContent(category: "social", digest: DigestRequest(key: "c:1", windowSeconds: 60, item: item)) }

            let first = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Ann")), now: Self.start).notification
            #expect(first.status == .queued && first.counts.pending == 2 && first.request.content == digest("Ann"))
            #expect(try await claimAll(store, now: Self.start).isEmpty, "held until the window ends")

            let second = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Bob")), now: Self.start.addingTimeInterval(10)).notification
            #expect(second.status == .done && second.counts.targeted == 2 && second.counts.pending == 0)
            #expect(second.counts.skipped == [.digested: 2] && second.counts.accepted == 0)
            let folded = try await store.deliveries(notificationID: second.id).items
            #expect(folded.map(\.token) == [token(1), token(2)] && folded.allSatisfy { $0.outcome == .digested })
            #expect(try await store.notification(id: second.id)?.counts.skipped == [.digested: 2])

            #expect(try await claimAll(store, now: Self.start.addingTimeInterval(59.999)).isEmpty, "still held")
            let batch = try await Self.onlyBatch(of: first.id, store: store, now: Self.start.addingTimeInterval(60))
            #expect(batch.items.map(\.token).sorted() == [token(1), token(2)])
            let screened = try await store.screen(batch, rules: nil, now: Self.start.addingTimeInterval(60))
            #expect(screened.digests == ["u1": DigestSummary(count: 2, items: ["Ann", "Bob"])])
            #expect(screened.skipped.isEmpty)
            #expect(try await store.screen(batch, rules: nil, now: Self.start.addingTimeInterval(61)).digests == screened.digests, "a retry reads the same digest")
            try await Self.complete(batch, screened, store: store, now: Self.start.addingTimeInterval(60))
            let sent = try #require(try await store.notification(id: first.id))
            #expect(sent.status == .done && sent.counts.accepted == 2 && sent.counts.skipped.isEmpty)

            // Closed: the next one opens a digest of its own, held by it.
            let third = try await store.enqueue(Self.request(.users(["u1", "u2"]), content: digest("Cy")), now: Self.start.addingTimeInterval(70)).notification
            #expect(third.status == .queued && third.counts.pending == 3 && third.counts.skipped.isEmpty)
            #expect(try await claimAll(store, now: Self.start.addingTimeInterval(129)).isEmpty)
            let thirdBatch = try await Self.onlyBatch(of: third.id, store: store, now: Self.start.addingTimeInterval(130))
            let thirdScreened = try await store.screen(thirdBatch, rules: nil, now: Self.start.addingTimeInterval(130))
            #expect(thirdScreened.digests == ["u1": DigestSummary(count: 1, items: ["Cy"]), "u2": DigestSummary(count: 1, items: ["Cy"])])
            try await Self.complete(thirdBatch, thirdScreened, store: store, now: Self.start.addingTimeInterval(130))
            #expect(try await store.notification(id: third.id)?.counts.accepted == 3)

            for audience in [Audience.tokens([token(1)]), .all, .tags(["fans"])] {
                let refused = await #expect(throws: StoreError.self, "\(audience)") { try await store.enqueue(Self.request(audience, content: digest("Dee"))) }
                #expect(refused?.code == .invalidInput)
            }
            for window in [0, 86_400] {
                let content = NotificationContent(digest: DigestRequest(key: "c:1", windowSeconds: window))
                let refused = await #expect(throws: StoreError.self, "window \(window)") { try await store.enqueue(Self.request(.users(["u1"]), content: content)) }
                #expect(refused?.code == .invalidInput)
            }
            #expect(try await store.notifications(app: app).items.count == 3, "nothing refused was stored")
        }
    }

    @Test("a digest whose window ended before it was sent keeps what it held when the next notification opens a new one", arguments: Backend.allCases)
    func digestSentLate(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1, user: "u1"), app: app)
            func digest(_ item: String) -> NotificationContent { NotificationContent(digest: DigestRequest(key: "c:2", windowSeconds: 60, item: item)) }
            let first = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Ann")), now: Self.start).notification
            let folded = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Bob")), now: Self.start.addingTimeInterval(10)).notification
            #expect(folded.counts.skipped == [.digested: 1])
            // The window has ended, the first not yet claimed: the next opens a new digest.
            let next = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Cy")), now: Self.start.addingTimeInterval(61)).notification
            #expect(next.status == .queued && next.counts.skipped.isEmpty)

            let late = try await Self.onlyBatch(of: first.id, store: store, now: Self.start.addingTimeInterval(62))
            let screened = try await store.screen(late, rules: nil, now: Self.start.addingTimeInterval(62))
            #expect(screened.digests == ["u1": DigestSummary(count: 2, items: ["Ann", "Bob"])], "Bob's item is not lost")
            try await Self.complete(late, screened, store: store, now: Self.start.addingTimeInterval(62))

            let nextBatch = try await Self.onlyBatch(of: next.id, store: store, now: Self.start.addingTimeInterval(121))
            let nextScreened = try await store.screen(nextBatch, rules: nil, now: Self.start.addingTimeInterval(121))
            #expect(nextScreened.digests == ["u1": DigestSummary(count: 1, items: ["Cy"])])
            try await Self.complete(nextBatch, nextScreened, store: store, now: Self.start.addingTimeInterval(121))
        }
    }

    @Test("a digest whose holder was cancelled takes nothing more: the next notification opens a digest of its own", arguments: Backend.allCases)
    func digestHolderCancelled(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1, user: "u1"), app: app)
            func digest(_ item: String) -> NotificationContent { NotificationContent(digest: DigestRequest(key: "c:3", windowSeconds: 60, item: item)) }
            let first = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Ann")), now: Self.start).notification
            _ = try await store.cancel(id: first.id, now: Self.start.addingTimeInterval(5))
            let next = try await store.enqueue(Self.request(.users(["u1"]), content: digest("Bob")), now: Self.start.addingTimeInterval(10)).notification
            #expect(next.status == .queued && next.counts.skipped.isEmpty, "not folded into a digest that will never be sent")
            let batch = try await Self.onlyBatch(of: next.id, store: store, now: Self.start.addingTimeInterval(70))
            #expect(try await store.screen(batch, rules: nil, now: Self.start.addingTimeInterval(70)).digests == ["u1": DigestSummary(count: 1, items: ["Bob"])])
        }
    }

    @Test("the store refuses a digest key or item out of bounds, and a window that outlasts the notification's expiration", arguments: [Backend.sqlite])
    func digestBounds(backend: Backend) async throws {
        try await withStore(backend) { store in
            for request in [
                DigestRequest(key: String(repeating: "k", count: 129), windowSeconds: 60), DigestRequest(key: "a\nb", windowSeconds: 60),
                DigestRequest(key: "k", windowSeconds: 60, item: "two\nlines"), DigestRequest(key: "k", windowSeconds: 60, item: String(repeating: "i", count: 257)),
            ] {
                await #expect(throws: StoreError.self, "\(request)") { try await store.enqueue(Self.request(.users(["u1"]), content: NotificationContent(digest: request))) }
            }
            var expiring = Self.request(.users(["u1"]), content: NotificationContent(digest: DigestRequest(key: "k", windowSeconds: 120)))
            expiring.expiration = try PushExpiration(unixSeconds: Int(Date().timeIntervalSince1970) + 60)
            await #expect(throws: StoreError.self) { try await store.enqueue(expiring) }
        }
    }

    @Test("retention: what caps counted and digests held, older than any window, is deleted; what is newer is kept", arguments: Backend.allCases)
    func purgeScreening(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1, user: "ann"), app: app)
            try await store.register(try registration(2, user: "bob"), app: app)
            let rules = ScreeningRules(category: "promo", receivesByDefault: true, honorsPreferences: true, caps: [FrequencyCap(count: 1, windowSeconds: 600)])
            let old = try await store.enqueue(Self.request(.users(["ann"]), content: NotificationContent(category: "promo")), now: Self.start).notification
            let oldBatch = try await Self.onlyBatch(of: old.id, store: store, now: Self.start)
            try await Self.complete(oldBatch, try await store.screen(oldBatch, rules: rules, now: Self.start), store: store, now: Self.start)
            let digest = NotificationContent(digest: DigestRequest(key: "k", windowSeconds: 60))
            _ = try await store.enqueue(Self.request(.users(["ann"]), content: digest), now: Self.start)

            let later = Self.start.addingTimeInterval(2 * 86400)
            let recent = try await store.enqueue(Self.request(.users(["bob"]), content: NotificationContent(category: "promo")), now: later).notification
            let recentBatch = try await Self.onlyBatch(of: recent.id, store: store, now: later)
            try await Self.complete(recentBatch, try await store.screen(recentBatch, rules: rules, now: later), store: store, now: later)

            #expect(try await store.purgeScreening(before: Self.start.addingTimeInterval(86400)) == 2, "ann's count and ann's digest")
            #expect(try await store.purgeScreening(before: Self.start.addingTimeInterval(86400)) == 0, "bob's count is newer")
            #expect(try await store.purgeScreening(before: later.addingTimeInterval(1)) == 1)
        }
    }

    // MARK: Caps across processes

    @Test("PostgreSQL: two processes screening one user's 20 notifications at once under a cap of 3 send exactly 3")
    func capsAcrossProcesses() async throws {
        let scratch = try ScratchDirectory()
        let url = try await Backend.postgres.storeURL(scratch: scratch)
        let configuration = try HeraldStore.Configuration(url: url)
        let rules = ScreeningRules(category: "promo", receivesByDefault: true, honorsPreferences: true, caps: [FrequencyCap(count: 3, windowSeconds: 600)])
        let now = Self.start
        let ids = try await withHeraldStore(configuration: configuration) { store in
            try await store.register(try registration(1, user: "ann"), app: app)
            try await store.register(try registration(2, user: "ann"), app: app)
            var ids: [String] = []
            for _ in 0..<20 { ids.append(try await store.enqueue(Self.request(.users(["ann"]), content: NotificationContent(category: "promo")), now: now).notification.id) }
            return ids
        }
        let outcomes = try await withHeraldStore(configuration: configuration) { first in
            try await withHeraldStore(configuration: configuration) { second in
                try await withThrowingTaskGroup(of: [DeliveryOutcome.Result].self) { group in
                    // Two workers in each process; a claim of 3 devices splits notifications between them.
                    for (number, store) in [first, second, first, second].enumerated() {
                        group.addTask {
                            var results: [DeliveryOutcome.Result] = []
                            for _ in 0..<100 {
                                let batches = try await store.claim(owner: "worker-\(number)", limit: 3, now: now)
                                if batches.isEmpty { break }
                                for batch in batches {
                                    let screened = try await store.screen(batch, rules: rules, now: now)
                                    results += try await Self.complete(batch, screened, store: store, now: now)
                                }
                            }
                            return results
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
        }
        #expect(outcomes.count == 40)
        #expect(outcomes.filter { $0 == .accepted(receipt: "sent") }.count == 6, "3 notifications × 2 devices")
        #expect(outcomes.filter { $0 == .skipped(.capped) }.count == 34)
        try await withHeraldStore(configuration: configuration) { store in
            var sent = 0
            for id in ids {
                let notification = try #require(try await store.notification(id: id))
                #expect(notification.status == .done)
                // Never one device sent and the other capped: one answer per user.
                #expect(notification.counts.accepted == 2 && notification.counts.skipped.isEmpty || notification.counts.accepted == 0 && notification.counts.skipped == [.capped: 2])
                if notification.counts.accepted == 2 { sent += 1 }
            }
            #expect(sent == 3)
        }
    }

    // MARK: Deleting an app

    @Test("deleting an app deletes its templates, preferences, frequency counts and digests, and leaves another app's", arguments: Backend.allCases)
    func deleteApp(backend: Backend) async throws {
        try await withStore(backend) { store, database in
            let tables = ["templates", "user_preferences", "frequency", "digests"]
            try await Self.populate(store, app: "keep", now: Self.start)
            let baseline = try await tableRowCounts(url: database.url)
            try await Self.populate(store, app: "doomed", now: Self.start)
            let populated = try await tableRowCounts(url: database.url)
            for table in tables { #expect((populated[table] ?? 0) > (baseline[table] ?? 0), "\(table): the doomed app has rows in it") }

            try await store.deleteApp("doomed", batchSize: 1)
            let after = try await tableRowCounts(url: database.url)
            for table in tables { #expect(after[table] == baseline[table], "\(table): only the kept app's rows") }
            #expect(try await store.templates(app: "doomed").items.isEmpty)
            #expect(try await store.preferences(app: "doomed", user: "u1").categories.isEmpty)
            #expect(try await store.template(app: "keep", name: "welcome")?.version == 1)
            #expect(try await store.preferences(app: "keep", user: "u1").categories == ["promo": .init(all: true)])

            // A new app of the same name starts afresh: no cap counted, no digest open.
            try await store.register(try registration(1, user: "u1"), app: "doomed")
            let content = NotificationContent(category: "promo", digest: DigestRequest(key: "k", windowSeconds: 60, item: "new"))
            let fresh = try await store.enqueue(Self.request(.users(["u1"]), content: content, for: "doomed"), now: Self.start).notification
            #expect(fresh.status == .queued && fresh.counts.skipped.isEmpty, "no digest of the deleted app folds it")
            let batch = try await Self.onlyBatch(of: fresh.id, store: store, now: Self.start.addingTimeInterval(60))
            let screened = try await store.screen(batch, rules: Self.oneADay, now: Self.start.addingTimeInterval(60))
            #expect(screened.skipped.isEmpty, "no count of the deleted app caps it")
            #expect(screened.digests == ["u1": DigestSummary(count: 1, items: ["new"])])
            try await Self.complete(batch, screened, store: store, now: Self.start.addingTimeInterval(60))
        }
    }

    /// A cap of one a day.
    static let oneADay = ScreeningRules(category: "promo", receivesByDefault: true, honorsPreferences: true, caps: [FrequencyCap(count: 1, windowSeconds: 86_400)])

    /// Rows of `app` in every table of this feature: a template, a user's choices, a frequency
    /// count and a digest (a notification to its user `u1`, device 1, held and then sent). Claims
    /// at `now` plus a minute: nothing else may be due then.
    static func populate(_ store: HeraldStore, app: String, now: Date) async throws {
        _ = try await store.putTemplate(app: app, name: "welcome", body: Array(#"{"title":"Hi"}"#.utf8), now: now)
        try await store.setPreferences(UserPreferences(user: "u1", categories: ["promo": .init(all: true)]), app: app, now: now)
        // Registered again: active, whatever a send did to it before.
        try await store.register(try registration(1, user: "u1"), app: app, now: now)
        let content = NotificationContent(category: "promo", digest: DigestRequest(key: "welcome", windowSeconds: 60, item: "hello"))
        let held = try await store.enqueue(request(.users(["u1"]), content: content, for: app), now: now).notification.id
        let batch = try await onlyBatch(of: held, store: store, now: now.addingTimeInterval(60))
        try await complete(batch, try await store.screen(batch, rules: oneADay, now: now.addingTimeInterval(60)), store: store, now: now.addingTimeInterval(60))
    }

    // MARK: Helpers

    static func request(_ audience: Audience, content: NotificationContent? = nil, for target: String = app) -> NotificationRequest {
        var request = NotificationRequest(app: target, audience: audience, payload: payload)
        request.content = content
        return request
    }

    /// The one batch of notification `id` a claim at `now` gives; any other batch claimed is released.
    static func onlyBatch(of id: String, store: HeraldStore, now: Date = Date()) async throws -> WorkBatch {
        let batches = try await claimAll(store, now: now)
        for other in batches where other.notification.id != id { try await store.release(other) }
        let mine = batches.filter { $0.notification.id == id }
        #expect(mine.count == 1, "one batch of \(id) claimed")
        return try #require(mine.first)
    }

    /// Completes `batch` as the worker does after screening: the skipped devices with their
    /// reason, the others accepted. Returns the results.
    @discardableResult
    static func complete(_ batch: WorkBatch, _ screening: Screening, store: HeraldStore, now: Date = Date()) async throws -> [DeliveryOutcome.Result] {
        let outcomes = batch.items.map { item in
            DeliveryOutcome(token: item.token, result: screening.skipped[item.token].map { .skipped($0) } ?? .accepted(receipt: "sent"))
        }
        try await store.complete(batch, outcomes: outcomes, now: now)
        return outcomes.map(\.result)
    }
}
