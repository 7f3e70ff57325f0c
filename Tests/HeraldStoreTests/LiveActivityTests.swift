import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Live Activities in the store: a start reaches push-to-start tokens of its activity type only;
/// events reach an activity's update tokens; an end is final (and replayed by its idempotency
/// key); tokens are forgotten after the dismissal date.
@Suite("Live Activities", .timeLimit(.minutes(6)))
struct LiveActivityTests {
    static let start = Array(#"{"aps":{"event":"start","timestamp":1}}"#.utf8)
    static let update = Array(#"{"aps":{"event":"update","timestamp":2}}"#.utf8)

    static func starting(_ audience: Audience, type: String = "Delivery") -> NotificationRequest {
        NotificationRequest(app: app, audience: audience, payload: start, pushType: .liveactivity, activityType: type)
    }

    static func event(_ id: String, endsUntil: Date? = nil, key: String? = nil) -> NotificationRequest {
        NotificationRequest(app: app, audience: .activity(id), payload: update, pushType: .liveactivity, idempotencyKey: key, endsActivityUntil: endsUntil)
    }

    @Test("a start reaches push-to-start tokens of its activity type only, whatever the audience", arguments: Backend.allCases)
    func startRouting(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try DeviceRegistration(token: token(1), user: "ann", tags: ["fans"], kind: .liveactivity, activityType: "Delivery"), app: app)
            try await store.register(try DeviceRegistration(token: token(2), user: "ann", tags: ["fans"], kind: .liveactivity, activityType: "Score"), app: app)
            try await store.register(try DeviceRegistration(token: token(3), user: "ann", tags: ["fans"]), app: app)

            let byUser = try await store.enqueue(Self.starting(.users(["ann"]))).notification
            #expect(byUser.counts.targeted == 1)
            let explicit = try await store.enqueue(Self.starting(.tokens([token(1), token(2), token(3)]))).notification
            #expect(explicit.counts.rejected == ["ActivityTypeMismatch": 1, "TokenKindMismatch": 1])
            let byTag = try await store.enqueue(Self.starting(.tags(["fans"]))).notification
            let everyone = try await store.enqueue(Self.starting(.all)).notification
            #expect(byTag.counts.targeted == 1 && everyone.counts.targeted == 1)

            var reached: [String: [String]] = [:]
            for batch in try await claimAll(store) { reached[batch.notification.id, default: []] += batch.items.map(\.token) }
            for id in [byUser.id, explicit.id, byTag.id, everyone.id] { #expect(reached[id] == [token(1)], "\(id)") }

            // Only a Live Activity start names an activity type, and it must.
            await #expect(throws: StoreError.self) {
                try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload, activityType: "Delivery"))
            }
            await #expect(throws: StoreError.self) {
                try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: Self.start, pushType: .liveactivity))
            }
        }
    }

    @Test("events reach every update token; an end is final, replayed by its key; later events and tokens conflict", arguments: Backend.allCases)
    func lifecycle(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = "8C4F6A8E-1D2B-4E8A-9C3B-0F1E2D3C4B5A"
            await #expect(throws: StoreError.self, "an event for an activity no token was reported for") {
                try await store.enqueue(Self.event(id))
            }
            #expect(try await store.registerActivityToken(app: app, activityID: id, token: token(1), user: "ann").created)
            #expect(try await store.registerActivityToken(app: app, activityID: id, token: token(2).uppercased(), environment: .sandbox).created)
            let again = try await store.registerActivityToken(app: app, activityID: id, token: token(1))
            #expect(!again.created && again.token.user == "ann", "a refresh keeps the user")

            let activity = try #require(try await store.activity(app: app, id: id))
            #expect(activity.state == .active && activity.tokens.map(\.token) == [token(1), token(2)])
            #expect(activity.tokens[1].environment == .sandbox)
            #expect(try await store.activity(app: "elsewhere", id: id) == nil)

            for _ in 0..<3 {
                let update = try await store.enqueue(Self.event(id)).notification
                #expect(update.counts.targeted == 2)
            }
            let sent = try await claimAll(store)
            #expect(sent.flatMap(\.items).count == 6)
            #expect(sent.allSatisfy { $0.notification.payload == Self.update && $0.notification.pushType == .liveactivity })
            #expect(sent.flatMap(\.items).filter { $0.token == token(2) }.allSatisfy { $0.environment == .sandbox })

            let dismissal = Date().addingTimeInterval(600)
            let (end, created) = try await store.enqueue(Self.event(id, endsUntil: dismissal, key: "end-1"))
            #expect(created && end.counts.targeted == 2)
            let ended = try #require(try await store.activity(app: app, id: id))
            #expect(ended.state == .ended && ended.dismissalAt.map { abs($0.timeIntervalSince(dismissal)) < 0.01 } == true)

            let (replayed, createdAgain) = try await store.enqueue(Self.event(id, endsUntil: dismissal, key: "end-1"))
            #expect(!createdAgain && replayed.id == end.id, "the same end again is the first answer")
            for request in [Self.event(id), Self.event(id, endsUntil: dismissal, key: "end-2")] {
                do {
                    _ = try await store.enqueue(request)
                    Issue.record("an event after the end was queued")
                } catch let error as StoreError {
                    #expect(error.code == .conflict)
                }
            }
            do {
                try await store.registerActivityToken(app: app, activityID: id, token: token(3))
                Issue.record("a token for an ended activity was recorded")
            } catch let error as StoreError {
                #expect(error.code == .conflict)
            }

            // Tokens are forgotten at the dismissal date, not before.
            #expect(try await store.forgetDismissedActivities(now: dismissal.addingTimeInterval(-1)) == 0)
            #expect(try await store.forgetDismissedActivities(now: dismissal.addingTimeInterval(1)) == 1)
            #expect(try await store.activity(app: app, id: id) == nil)
        }
    }

    @Test("an update token APNs says is gone (410 after it was reported, or BadDeviceToken) is forgotten by its activity; one reported again since is kept", arguments: Backend.allCases)
    func goneTokens(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = "act-gone"
            let reported = Date()
            for number in 1...3 { try await store.registerActivityToken(app: app, activityID: id, token: token(number), now: reported) }
            _ = try await store.enqueue(Self.event(id), now: reported)
            for batch in try await claimAll(store, now: reported) {
                let outcomes = batch.items.map { item in
                    switch item.token {
                    case token(1): DeliveryOutcome(token: item.token, result: .rejected(reason: .apns(.unregistered), timestamp: reported.addingTimeInterval(5)))
                    case token(2): DeliveryOutcome(token: item.token, result: .rejected(reason: .apns(.unregistered), timestamp: reported.addingTimeInterval(-5)))
                    default: DeliveryOutcome(token: item.token, result: .rejected(reason: .apns(.badDeviceToken), timestamp: nil))
                    }
                }
                try await store.complete(batch, outcomes: outcomes, now: reported.addingTimeInterval(10))
            }
            #expect(try await store.activity(app: app, id: id)?.tokens.map(\.token) == [token(2)], "gone after it was reported, and bad: forgotten; reported since: kept")
        }
    }

    @Test("tokens: one forgotten, bad IDs and tokens refused, at most LiveActivity.maximumTokens per activity", arguments: Backend.allCases)
    func tokens(backend: Backend) async throws {
        try await withStore(backend) { store in
            let id = "act-1"
            for number in 0..<LiveActivity.maximumTokens { try await store.registerActivityToken(app: app, activityID: id, token: token(number)) }
            do {
                try await store.registerActivityToken(app: app, activityID: id, token: token(LiveActivity.maximumTokens))
                Issue.record("token \(LiveActivity.maximumTokens + 1) was recorded")
            } catch let error as StoreError {
                #expect(error.code == .invalidInput && error.message.contains("update tokens"))
            }
            // One already there is refreshed, whatever the count.
            #expect(try await store.registerActivityToken(app: app, activityID: id, token: token(5), user: "bo").created == false)
            #expect(try await store.deleteActivityToken(app: app, activityID: id, token: token(5)))
            #expect(try await !store.deleteActivityToken(app: app, activityID: id, token: token(5)))
            #expect(try await store.activity(app: app, id: id)?.tokens.count == LiveActivity.maximumTokens - 1)
            for (badID, badToken) in [("", token(1)), (String(repeating: "a", count: 129), token(1)), ("a b", token(1)), ("a\u{0}", token(1)), (id, "xyz"), (id, "")] {
                await #expect(throws: StoreError.self, "\(badID.debugDescription) \(badToken)") {
                    try await store.registerActivityToken(app: app, activityID: badID, token: badToken)
                }
            }
        }
    }
}
