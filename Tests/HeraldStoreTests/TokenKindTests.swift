import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Token kinds in the registry: stored, kept and replaced like a device's other fields, listed by
/// kind, and the only tokens a push type reaches.
@Suite("Token kinds", .timeLimit(.minutes(6)))
struct TokenKindTests {
    @Test("a kind is stored, kept by a registration without one (one at a time or in bulk), replaced by one with one; activityType goes with liveactivity", arguments: Backend.allCases)
    func registry(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(0), app: app)
            try await store.register(try DeviceRegistration(token: token(1), kind: .voip), app: app)
            try await store.register(try DeviceRegistration(token: token(2), kind: .liveactivity, activityType: "DeliveryAttributes"), app: app)
            #expect(try await store.device(app: app, token: token(0))?.kind == .alert, "a new device without a kind is an alert token")
            #expect(try await store.device(app: app, token: token(1))?.kind == .voip)
            let live = try #require(try await store.device(app: app, token: token(2)))
            #expect(live.kind == .liveactivity && live.activityType == "DeliveryAttributes")

            // Registering again: without a kind keeps it (bare or with other fields), with one replaces it.
            try await store.register(try registration(1), app: app)
            try await store.register(try registration(2, user: .some("ann")), app: app)
            #expect(try await store.device(app: app, token: token(1))?.kind == .voip)
            #expect(try await store.device(app: app, token: token(2))?.activityType == "DeliveryAttributes")
            let stream = AsyncStream<DeviceRegistration> { continuation in
                continuation.yield(try! registration(1))
                continuation.yield(try! DeviceRegistration(token: token(2), kind: .widgets))
                continuation.yield(try! DeviceRegistration(token: token(3), kind: .complication))
                continuation.finish()
            }
            #expect(try await store.register(contentsOf: stream, app: app) == 3)
            #expect(try await store.device(app: app, token: token(1))?.kind == .voip, "a bare line keeps the kind")
            let widgets = try #require(try await store.device(app: app, token: token(2)))
            #expect(widgets.kind == .widgets && widgets.activityType == nil && widgets.user == "ann", "a kind given replaces it and its activity type")
            #expect(try await store.device(app: app, token: token(3))?.kind == .complication)

            #expect(try await store.devices(app: app, filter: DeviceFilter(kind: .voip), limit: 10).items.map(\.token) == [token(1)])
            #expect(try await store.devices(app: app, filter: DeviceFilter(kind: .alert), limit: 10).items.map(\.token) == [token(0)])
        }
    }

    @Test("activityType: required with liveactivity, refused with any other kind, an identifier")
    func activityType() throws {
        for (kind, type, words) in [
            (TokenKind.liveactivity, nil, "needs its Live Activity's attributes type"), (.liveactivity, "", "needs"), (.liveactivity, "Has Space", "needs"),
            (.liveactivity, String(repeating: "A", count: 129), "needs"), (.voip, "Delivery", "only a liveactivity token"), (nil, "Delivery", "only a liveactivity token"),
        ] as [(TokenKind?, String?, String)] {
            let error = #expect(throws: StoreError.self) { try DeviceRegistration(token: token(1), kind: kind, activityType: type) }
            #expect(error?.code == .invalidInput && error?.message.hasPrefix("activityType:") == true && error?.message.contains(words) == true, "\(String(describing: error))")
        }
        #expect(try DeviceRegistration(token: token(1), kind: .liveactivity, activityType: "App.Delivery_2").activityType == "App.Delivery_2")
    }

    @Test("each push type reaches its kind's tokens only, for every audience; mdm, and liveactivity without an activity type, are refused", arguments: Backend.allCases)
    func routing(backend: Backend) async throws {
        try await withStore(backend) { store in
            let kinds: [TokenKind] = [.alert, .voip, .complication, .fileprovider, .location, .pushtotalk, .widgets, .controls]
            for (number, kind) in kinds.enumerated() {
                try await store.register(try DeviceRegistration(token: token(number), user: .some("ann"), tags: ["all"], kind: kind), app: app)
            }
            for pushType in PushType.allCases {
                let request = NotificationRequest(app: app, audience: .all, payload: payload, pushType: pushType)
                guard let kind = TokenKind(for: pushType), kind != .liveactivity else {
                    let error = await #expect(throws: StoreError.self) { try await store.enqueue(request) }
                    // A Live Activity start names the activity type of its push-to-start tokens.
                    #expect(error?.code == .invalidInput && error?.message.hasPrefix(pushType == .liveactivity ? "activityType:" : "pushType:") == true)
                    continue
                }
                let expected = [token(kinds.firstIndex(of: kind)!)]
                for audience in [Audience.all, .tags(["all"]), .users(["ann"])] {
                    var request = request
                    request.audience = audience
                    let (queued, _) = try await store.enqueue(request)
                    #expect(queued.counts.targeted == 1, "\(pushType) to \(audience)")
                    #expect(try await deliverAll(store) == expected, "\(pushType) to \(audience)")
                }
                // Explicit tokens: every other kind is refused at once with the reason.
                var explicit = request
                explicit.audience = .tokens((0..<kinds.count).map(token))
                let (queued, _) = try await store.enqueue(explicit)
                #expect(queued.counts.rejected == ["TokenKindMismatch": kinds.count - 1], "\(pushType)")
                #expect(try await deliverAll(store) == expected, "\(pushType) to tokens")
            }
        }
    }

    @Test("an environment is stored, kept by a registration without one, and carried to every claimed device: ranges, explicit tokens, users, retries", arguments: Backend.allCases)
    func environments(backend: Backend) async throws {
        try await withStore(backend) { store in
            // 0, 1: sandbox; 2: production; 3: none (the app's).
            for number in 0..<4 {
                let environment: TokenEnvironment? = number < 2 ? .sandbox : number == 2 ? .production : nil
                try await store.register(try DeviceRegistration(token: token(number), user: .some("ann"), tags: ["t"], environment: environment), app: app)
            }
            try await store.register(try registration(0, badge: 4), app: app)
            #expect(try await store.device(app: app, token: token(0))?.environment == .sandbox, "kept by a registration without one")
            #expect(try await store.device(app: app, token: token(3))?.environment == nil)
            let sandbox = try await store.devices(app: app, filter: DeviceFilter(environment: .sandbox), limit: 10).items.map(\.token)
            #expect(sandbox.sorted() == [token(0), token(1)])
            let production = try await store.devices(app: app, filter: DeviceFilter(environment: .production, defaultEnvironment: .production), limit: 10)
            #expect(production.items.map(\.token).sorted() == [token(2), token(3)], "a device without one counts as the app's")
            let unset = try await store.devices(app: app, filter: DeviceFilter(environment: .sandbox, defaultEnvironment: .sandbox), limit: 10)
            #expect(unset.items.map(\.token).sorted() == [token(0), token(1), token(3)])

            let expected: [String: TokenEnvironment?] = [token(0): .sandbox, token(1): .sandbox, token(2): .production, token(3): nil]
            for audience in [Audience.all, .tags(["t"]), .users(["ann"]), .tokens((0..<4).map(token))] {
                let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload))
                let batches = try await claimAll(store)
                var claimed: [String: TokenEnvironment?] = [:]
                for item in batches.flatMap(\.items) { claimed[item.token] = item.environment }
                #expect(claimed == expected, "\(audience)")
                // A retry keeps its environment.
                for batch in batches {
                    try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .apns(.serviceUnavailable))) })
                }
                var retried: [String: TokenEnvironment?] = [:]
                for item in try await claimAll(store, now: Date().addingTimeInterval(3600)).flatMap(\.items) { retried[item.token] = item.environment }
                #expect(retried == expected, "retries of \(audience)")
                _ = try await store.cancel(id: queued.id)
            }
        }
    }
}
