import Crypto
import Foundation
import HeraldCore
import HeraldMock
import HeraldTestSupport
import HeraldWebPush
import HeraldWebPushMock
import Testing

/// `herald serve` as a process with browsers beside iPhones: its metrics are swift-prometheus's
/// (which traps on a clash of metric names), and SIGKILL mid-broadcast loses none of either.
@Suite("herald serve with Web Push", .serialized, .timeLimit(.minutes(6)))
struct WebPushServeTests {
    @Test("SIGKILL mid-way through a broadcast to 600 iPhones and 600 browsers, then started again: every device receives it at least once", arguments: Backend.allCases)
    func killedMidBroadcast(backend: Backend) async throws {
        if backend == .postgres, let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let setup = try await ServeCommandTests.Setup(database: try backend.storeURL(scratch: scratch))
        let vapid = VAPIDKey.generate()
        try await withMockWebPushServer { browsers in
            // Slow answers, so the broadcast is under way for seconds.
            browsers.scriptAll(.delay(.milliseconds(20), times: 1_000_000))
            let vapidFile = try setup.scratch.write("vapid.pem", vapid.pemRepresentation)
            let ca = try setup.scratch.write("webpush-ca.pem", browsers.certificateAuthorityPEM)
            let text = String(decoding: try FileContents.read(setup.configFile), as: UTF8.self).replacingOccurrences(
                of: #""connections": 1,"#,
                with: #""connections": 1, "webPush": {"vapidKeyFile": "\#(vapidFile)", "subject": "mailto:ops@example.com", "defaultURL": "https://shop.example.com/", "caFile": "\#(ca)"},"#
            )
            _ = try setup.scratch.write("herald.json", text)
            let devices = 600
            let (first, base) = try setup.serve()
            var subscriptions: [WebPushSubscription] = []
            for _ in 0..<devices {
                let subscription = browsers.subscribe(applicationServerKey: Array(vapid.publicKey.x963Representation))
                let (status, answer) = try await ServeCommandTests.call("POST", "\(base)/v1/apps/shop/webpush/subscriptions", body: subscription.json.jsonString)
                #expect(status == 201, "\(answer?.jsonString ?? "")")
                subscriptions.append(subscription)
            }
            let id = try await ServeCommandTests.importAndBroadcast(base, count: devices, alert: "mixed")
            let started = await eventually(within: .seconds(60), every: .milliseconds(5)) { browsers.receivedCount >= 100 }
            first.kill()
            let beforeKill = browsers.receivedCount
            #expect(started && beforeKill < devices, "killed mid-way through the browsers (\(beforeKill) of \(devices))")

            let (second, again) = try setup.serve()
            let done = try await ServeCommandTests.waitUntilDone(again, id)
            #expect(done?["accepted"]?.intValue == 2 * devices && done?["failed"]?.intValue == 0, "\(done?.jsonString ?? "")")
            if done?["status"]?.stringValue != "done" {
                Issue.record("the first process said:\n\(first.text.suffix(4000))\nthe second:\n\(second.text.suffix(4000))")
            }
            #expect(setup.received(alert: "mixed").count == devices, "every iPhone at least once")
            let missing = subscriptions.filter { browsers.received(for: $0).isEmpty }.count
            #expect(missing == 0, "every browser at least once: \(missing) missing")
            #expect(!first.text.contains("Fatal error") && !second.text.contains("Fatal error"))
            #expect(second.stop() == 0, "SIGTERM ends it cleanly")
        }
        try await setup.mock.shutdown()
    }
}
