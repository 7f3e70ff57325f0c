import _CryptoExtras
import Foundation
import HeraldCore
import HeraldFCM
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// Devices that stopped registering: FCM stops a registration token after 270 days inactive
/// (https://firebase.google.com/docs/cloud-messaging/manage-tokens), so the gateway retires an
/// Android device silent that long as `Stale`, and any platform's after the days an app sets.
@Suite("Stale devices", .timeLimit(.minutes(3)))
struct StaleDeviceTests {
    @Test("staleDeviceDays in the file: FCM's 270 by default, any platform's when set, 0 for never; a bad value named")
    func configuration() throws {
        let scratch = try ScratchDirectory()
        let account = try FCMServiceAccount(
            projectID: "droid", privateKeyID: "key1", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048), clientEmail: "push@droid.iam.gserviceaccount.com")
        try scratch.write("service-account.json", String(decoding: account.jsonRepresentation, as: UTF8.self))
        func load(_ extra: String) throws -> GatewayConfiguration.App {
            let file = try scratch.write(
                "herald.json",
                #"{"database": "sqlite:h.db", "apps": [{"id": "droid", "fcm": {"serviceAccountFile": "service-account.json"}\#(extra)}], "apiKeys": []}"#)
            return try #require(try GatewayConfiguration.load(file: file).apps.first)
        }
        #expect(try load("").staleDeviceDays == [.fcm: 270])
        #expect(try load(#", "staleDeviceDays": {"apns": 400, "fcm": 0}"#).staleDeviceDays == [.fcm: 0, .apns: 400])
        for (extra, expected) in [(#", "staleDeviceDays": {"fcm": -1}"#, "staleDeviceDays.fcm"), (#", "staleDeviceDays": {"pager": 3}"#, "pager")] {
            do {
                _ = try load(extra)
                Issue.record("\(extra) was taken")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    @Test("housekeeping retires each app's silent devices of the platforms it names, with a device.retired event's reason Stale", arguments: Backend.allCases)
    func housekeeping(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: backend.storeURL(scratch: scratch))) { store in
            var interest = WebhookInterest()
            interest.add(app: "droid", hook: "https://hooks.example/herald", events: [.deviceRetired])
            store.setWebhookInterest(interest)
            let address = try FCMAddress(registrationToken: "silent:APA91b" + String(repeating: "q", count: 40))
            let android = try await store.register(try DeviceRegistration(fcm: address), app: "droid").device.token
            try await store.register(try DeviceRegistration(token: token(1)), app: "droid")
            var app = GatewayConfiguration.App(id: "droid")
            app.staleDeviceDays = [.fcm: 1]
            let live = LiveConfiguration(
                configuration: GatewayConfiguration(database: try StoreURL("sqlite::memory:"), apps: [app], apiKeys: []), clients: GatewayClients())
            var housekeeping = Housekeeping(
                store: store, settings: HousekeepingSettings(), retention: .seconds(60), metrics: GatewayMetrics(registry: .init()), backlog: AppBacklog(),
                logger: .init(label: "test"))
            housekeeping.live = live
            #expect(await housekeeping.retireStale() == 0, "registered a moment ago: not silent for a day")
            #expect(await housekeeping.retireStale(now: Date().addingTimeInterval(2 * 86400)) == 1)
            #expect(try await store.device(app: "droid", token: android)?.reason == "Stale")
            #expect(try await store.device(app: "droid", token: token(1))?.status == .active, "APNs devices are kept: no days set for them")
            let events = try await store.claimWebhookEvents(owner: "test", limit: 10, lease: .seconds(30), now: Date().addingTimeInterval(3 * 86400))
            let retired = events.filter { $0.type == .deviceRetired }.map { String(decoding: $0.body, as: UTF8.self) }
            #expect(retired.count == 1 && retired[0].contains(#""reason":"Stale""#) && retired[0].contains(#""status":"unregistered""#), "\(retired)")
        }
    }
}
