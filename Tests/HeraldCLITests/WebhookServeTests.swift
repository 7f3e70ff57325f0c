import Crypto
import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldTestSupport
import Testing

/// Webhooks through `herald serve` as a process: killed with SIGKILL while events wait in the
/// outbox, then started again.
@Suite("Webhooks through herald serve", .serialized, .timeLimit(.minutes(6)))
struct WebhookServeTests {
    static let secret = "whsec-cli-\(UUID().uuidString)"

    @Test("SIGKILL with webhook events pending, then started again: every event arrives, signed, each ID the same on every attempt", arguments: Backend.allCases)
    func killedWithEventsPending(backend: Backend) async throws {
        if backend == .postgres, let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let setup = try await ServeCommandTests.Setup(database: try await backend.storeURL(scratch: scratch))
        // Refuses everything until allowed: the events stay in the outbox across the kill.
        let receiver = try await WebhookReceiver(scratch: scratch, secret: Self.secret, untilAllowed: true)
        defer { receiver.stop() }
        // The setup's configuration, with a webhook for its app, retried every second.
        let base = try String(contentsOfFile: setup.configFile, encoding: .utf8)
        var configuration = try JSONValue(parsing: Array(base.utf8))
        guard case .object(var root) = configuration, case .array(var apps) = root["apps"], case .object(var app) = apps[0] else {
            Issue.record("the setup's configuration is not as expected")
            return
        }
        app["webhooks"] = [["url": .string(receiver.url), "secretEnv": "HERALD_TEST_WEBHOOK_SECRET"]]
        apps[0] = .object(app)
        root["apps"] = .array(apps)
        root["webhookSender"] = ["retryInitialSeconds": 1, "retryMaximumSeconds": 1]
        configuration = .object(root)
        let configFile = try scratch.write("webhooks.json", configuration.jsonString)
        let environment = ["HERALD_TEST_WEBHOOK_SECRET": Self.secret]
        func serve() async throws -> (BackgroundHerald, String) {
            let process = try BackgroundHerald(["serve", "--config", configFile], environment: environment)
            let line = try await process.wait(for: "listening on http://127\\.0\\.0\\.1:[0-9]+")
            return (process, String(line.split(separator: " ").last!))
        }

        let (first, url) = try await serve()
        let lines = (0..<3).map { #"{"token": "\#(ServeCommandTests.token($0))"}"# }.joined(separator: "\n")
        let (imported, _) = try await ServeCommandTests.call("POST", "\(url)/v1/apps/shop/devices", body: lines, contentType: "application/x-ndjson")
        #expect(imported == 200)
        var ids: Set<String> = []
        for number in 0..<4 {
            let (queued, answer) = try await ServeCommandTests.call(
                "POST", "\(url)/v1/apps/shop/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "hook \#(number)"}}}"#
            )
            #expect(queued == 202)
            if let id = answer?["id"]?.stringValue { ids.insert(id) }
        }
        for id in ids { _ = try await ServeCommandTests.waitUntilDone(url, id) }
        // The receiver has refused at least one attempt: events are pending. Then kill -9.
        let attempted = await eventually(within: .seconds(30), every: .milliseconds(50)) { !receiver.records.isEmpty }
        #expect(attempted, "the sender tried")
        first.kill()
        receiver.allow()

        let (second, _) = try await serve()
        var completed: Set<String> = []
        let arrived = await eventually(within: .seconds(60), every: .milliseconds(100)) {
            completed = []
            for record in receiver.records where record.status == 200 {
                guard let event = try? JSONValue(parsing: Array(record.body.utf8)), event["type"] == "notification.completed" else { continue }
                if let id = event["data"]?["notification"]?.stringValue { completed.insert(id) }
            }
            return completed == ids
        }
        #expect(arrived, "every notification's completion arrived: \(completed.count) of \(ids.count)\n\(first.text.suffix(2000))\n\(second.text.suffix(2000))")
        let records = receiver.records
        #expect(records.allSatisfy { $0.valid }, "every signature checks out (Python's hmac)")
        // An event's ID is the same on every attempt: each completion has one ID.
        var eventIDs: [String: Set<String>] = [:]
        for record in records {
            guard let event = try? JSONValue(parsing: Array(record.body.utf8)), event["type"] == "notification.completed",
                  let notification = event["data"]?["notification"]?.stringValue, let id = event["id"]?.stringValue else { continue }
            eventIDs[notification, default: []].insert(id)
        }
        #expect(eventIDs.values.allSatisfy { $0.count == 1 }, "\(eventIDs)")
        #expect(await second.stop() == 0, "SIGTERM ends it cleanly")
        #expect(!first.text.contains(Self.secret) && !second.text.contains(Self.secret), "the secret is never logged")
        try await setup.mock.shutdown()
    }
}
