import Crypto
import Foundation
import HeraldCore
import HeraldFCMMock
import HeraldAPNSMock
import HeraldTestSupport
import HeraldWebPush
import HeraldWebPushMock
import Testing

/// `herald serve` as a process with browsers and Android devices beside iPhones: its metrics are
/// swift-prometheus's (which traps on a clash of metric names), and SIGKILL mid-broadcast loses
/// none of any.
@Suite("herald serve with Web Push and FCM", .serialized, .timeLimit(.minutes(6)))
struct WebPushServeTests {
    @Test("SIGKILL mid-way through a broadcast to 600 iPhones, 600 browsers and 600 Android devices, then started again: every device receives it at least once", arguments: Backend.allCases)
    func killedMidBroadcast(backend: Backend) async throws {
        if backend == .postgres, let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let setup = try await ServeCommandTests.Setup(database: try await backend.storeURL(scratch: scratch))
        let vapid = VAPIDKey.generate()
        try await withMockFCMServer { android in
        try await withMockWebPushServer { browsers in
            // Slow answers, so the broadcast is under way for seconds.
            browsers.scriptAll(.delay(.milliseconds(20), times: 1_000_000))
            android.scriptAll(.delay(.milliseconds(20), times: 1_000_000))
            let vapidFile = try setup.scratch.write("vapid.pem", vapid.pemRepresentation)
            let ca = try setup.scratch.write("webpush-ca.pem", browsers.certificateAuthorityPEM)
            let account = try setup.scratch.write("service-account.json", String(decoding: android.serviceAccountJSON, as: UTF8.self))
            let fcmCA = try setup.scratch.write("fcm-ca.pem", android.certificateAuthorityPEM)
            let text = String(decoding: try FileContents.read(setup.configFile), as: UTF8.self).replacingOccurrences(
                of: #""connections": 1,"#,
                with: #""connections": 1, "webPush": {"vapidKeyFile": "\#(vapidFile)", "subject": "mailto:ops@example.com", "defaultURL": "https://shop.example.com/", "caFile": "\#(ca)", "allowPrivateAddresses": true}, "fcm": {"serviceAccountFile": "\#(account)", "endpoint": "\#(android.origin)", "caFile": "\#(fcmCA)"},"#
            )
            _ = try setup.scratch.write("herald.json", text)
            let devices = 600
            let (first, base) = try await setup.serve()
            var subscriptions: [WebPushSubscription] = []
            for _ in 0..<devices {
                let subscription = browsers.subscribe(applicationServerKey: Array(vapid.publicKey.x963Representation))
                let (status, answer) = try await ServeCommandTests.call("POST", "\(base)/v1/apps/shop/webpush/subscriptions", body: subscription.json.jsonString)
                #expect(status == 201, "\(answer?.jsonString ?? "")")
                subscriptions.append(subscription)
            }
            let phones = (0..<devices).map { "and\($0):APA91b-" + String(repeating: "x", count: 140) }
            let lines = phones.map { #"{"token": "\#($0)", "platform": "fcm"}"# }.joined(separator: "\n")
            let (imported, report) = try await ServeCommandTests.call("POST", "\(base)/v1/apps/shop/devices", body: lines, contentType: "application/x-ndjson")
            #expect(imported == 200 && report?["upserted"]?.intValue == devices, "\(report?.jsonString ?? "")")
            let id = try await ServeCommandTests.importAndBroadcast(base, count: devices, alert: "mixed")
            let started = await eventually(within: .seconds(60), every: .milliseconds(5)) { browsers.receivedCount >= 100 && android.receivedCount >= 100 }
            first.kill()
            let beforeKill = (browsers.receivedCount, android.receivedCount)
            #expect(started && (beforeKill.0 < devices || beforeKill.1 < devices), "killed mid-way through the browsers and Android devices (\(beforeKill) of \(devices))")

            let (second, again) = try await setup.serve()
            let done = try await ServeCommandTests.waitUntilDone(again, id)
            #expect(done?["accepted"]?.intValue == 3 * devices && done?["failed"]?.intValue == 0, "\(done?.jsonString ?? "")")
            if done?["status"]?.stringValue != "done" {
                Issue.record("the first process said:\n\(first.text.suffix(4000))\nthe second:\n\(second.text.suffix(4000))")
            }
            #expect(setup.received(alert: "mixed").count == devices, "every iPhone at least once")
            let missing = subscriptions.filter { browsers.received(for: $0).isEmpty }.count
            #expect(missing == 0, "every browser at least once: \(missing) missing")
            let reached = Set(android.received.map(\.token))
            #expect(phones.allSatisfy(reached.contains), "every Android device at least once: \(phones.filter { !reached.contains($0) }.count) missing")
            #expect(!first.text.contains("Fatal error") && !second.text.contains("Fatal error"))
            #expect(await second.stop() == 0, "SIGTERM ends it cleanly")
        }
        }
        try await setup.mock.shutdown()
    }
}
