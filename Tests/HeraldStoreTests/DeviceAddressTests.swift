import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Devices that are not APNs tokens: an Android device's FCM registration token kept under an ID
/// made from it, beside APNs tokens and browsers, in the registry on both databases.
@Suite("Device addresses", .timeLimit(.minutes(6)))
struct DeviceAddressTests {
    static let registrationToken = "eXample-Token_1:APA91bH" + String(repeating: "k9Z-", count: 40)

    @Test("an FCM registration token: letters, digits, - _ : up to 4,096; its ID is stable, fcm_ and 32 base32 characters, never an APNs token's or a browser's")
    func fcmAddress() throws {
        let address = try FCMAddress(registrationToken: Self.registrationToken)
        #expect(address.id == FCMAddress.id(forToken: Self.registrationToken) && address.id.hasPrefix("fcm_") && address.id.utf8.count == 36)
        #expect(FCMAddress.isID(address.id) && !WebPushAddress.isID(address.id) && !FCMAddress.isID(token(1)))
        #expect(try FCMAddress(registrationToken: "other:APA91b").id != address.id)
        #expect(DevicePlatform(deviceID: address.id) == .fcm && DevicePlatform(deviceID: token(1)) == .apns)
        #expect(DevicePlatform(deviceID: WebPushAddress.id(forEndpoint: "https://push.example.net/x")) == .webpush)
        // A String and any other string type are told apart alike, a near miss of an ID's length or prefix as APNs.
        let browser = WebPushAddress.id(forEndpoint: "https://push.example.net/x")
        for id in [address.id, browser, token(1), String(address.id.dropLast()), "wp_" + String(browser.dropFirst(3)).uppercased(), "xx" + browser.dropFirst(2)] {
            #expect(DevicePlatform(deviceID: id) == DevicePlatform(deviceID: Substring(id)), "\(id)")
        }
        #expect(DevicePlatform(deviceID: String(address.id.dropLast())) == .apns && DevicePlatform(deviceID: "xx" + browser.dropFirst(2)) == .apns)
        #expect(!String(describing: address).contains("APA91b"), "the description shows the ID, not the token")
        for bad in ["", "with space", "semi;colon", "é", String(repeating: "a", count: 4097)] {
            let error = #expect(throws: StoreError.self) { try FCMAddress(registrationToken: bad) }
            #expect(error?.code == .invalidInput && error?.message.contains("FCM registration token") == true)
        }
        #expect(throws: Never.self) { try FCMAddress(registrationToken: String(repeating: "a", count: 4096)) }
        // Not registered by its ID alone.
        #expect(throws: StoreError.self) { try DeviceRegistration(token: address.id) }
    }

    @Test("devices silent since a cutoff are retired as Stale: their platform's only, a batch at a time; one registered again is active again", arguments: Backend.allCases)
    func staleDevices(backend: Backend) async throws {
        try await withStore(backend) { store in
            var android: [String] = []
            for number in 0..<3 {
                let address = try FCMAddress(registrationToken: "stale-\(number):APA91b" + String(repeating: "s", count: 40))
                android.append(try await store.register(try DeviceRegistration(fcm: address), app: app).device.token)
            }
            _ = try await store.register(try registration(1), app: app)
            // Everything registered before the cutoff (an hour from now) is silent since it.
            let cutoff = Date().addingTimeInterval(3600)
            let now = cutoff.addingTimeInterval(1)
            let first = try await store.retireStaleDevices(app: app, platform: .fcm, notUpdatedSince: cutoff, limit: 2, now: now)
            let second = try await store.retireStaleDevices(app: app, platform: .fcm, notUpdatedSince: cutoff, limit: 2, now: now)
            let third = try await store.retireStaleDevices(app: app, platform: .fcm, notUpdatedSince: cutoff, limit: 2, now: now)
            #expect(first == 2 && second == 1 && third == 0, "a batch at a time, each device once")
            for token in android {
                let device = try #require(try await store.device(app: app, token: token))
                #expect(device.status == .unregistered && device.reason == "Stale", "\(device)")
            }
            #expect(try await store.device(app: app, token: token(1))?.status == .active, "an APNs device is not FCM's to retire")
            // Registered again: active again, and not stale before the next cutoff.
            _ = try await store.register(try DeviceRegistration(fcm: try FCMAddress(registrationToken: "stale-0:APA91b" + String(repeating: "s", count: 40))), app: app)
            #expect(try await store.device(app: app, token: android[0])?.status == .active)
            #expect(try await store.retireStaleDevices(app: app, platform: .fcm, notUpdatedSince: Date().addingTimeInterval(-60), now: now) == 0)
        }
    }

    @Test("Android devices in the registry: registered again is the same device, read with their token, counted and listed by platform", arguments: Backend.allCases)
    func androidDevices(backend: Backend) async throws {
        try await withStore(backend) { store in
            let address = try FCMAddress(registrationToken: Self.registrationToken)
            let (device, created) = try await store.register(try DeviceRegistration(fcm: address, user: "ann", tags: ["beta"]), app: app)
            #expect(created && device.token == address.id && device.platform == .fcm && device.fcm == address && device.user == "ann")
            let (again, createdAgain) = try await store.register(try DeviceRegistration(fcm: address, user: "bo"), app: app)
            #expect(!createdAgain && again.user == "bo" && again.tags == ["beta"] && again.fcm == address)
            _ = try await store.register(try registration(1, user: "bo"), app: app)

            #expect(try await store.addresses(FCMAddress.self, app: app, tokens: [address.id, token(1)]) == [address.id: address])
            #expect(try await store.addresses(WebPushAddress.self, app: app, tokens: [address.id]).isEmpty)
            var filter = DeviceFilter()
            filter.platform = .fcm
            #expect(try await store.devices(app: app, filter: filter).items.map(\.token) == [address.id])
            filter.platform = .apns
            #expect(try await store.devices(app: app, filter: filter).items.map(\.token) == [token(1)])
            let counts = try await store.deviceCounts(app: app)
            #expect(counts.filter { $0.platform == .fcm }.map(\.count) == [1] && counts.filter { $0.platform == .apns }.map(\.count) == [1])

            // A broadcast reaches both; completions count Android outcomes apart.
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            let batches = try await store.claim(owner: "w", limit: 10)
            #expect(Set(batches.flatMap(\.items).map(\.token)) == [address.id, token(1)])
            for batch in batches {
                try await store.complete(batch, outcomes: batch.items.map { DeliveryOutcome(token: $0.token, result: .accepted(receipt: nil)) })
            }
            let done = try #require(try await store.notification(id: queued.id))
            #expect(done.counts.accepted == 2 && done.counts.android == PlatformCounts(accepted: 1) && done.counts.browsers == PlatformCounts())
        }
    }
}
