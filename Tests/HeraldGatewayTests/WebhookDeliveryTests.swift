import Foundation
import HeraldCore
import HeraldAPNSMock
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HummingbirdTesting
import InMemoryLogging
import Logging
import NIOCore
import Testing

/// Webhooks end to end: a gateway on each database sends its events to a real receiver on
/// 127.0.0.1 (Python's http.server, which checks the signatures with Python's hmac).
@Suite("Webhook delivery", .timeLimit(.minutes(4)))
struct WebhookDeliveryTests {
    static let secret = "whsec-\(UUID().uuidString)"

    /// A gateway whose app has one webhook to `receiver`, retried every second.
    static func configure(_ configuration: inout GatewayConfiguration, receiver: WebhookReceiver, giveUpAfter: Duration? = nil) {
        var hook = GatewayConfiguration.Webhook(url: receiver.url, secret: WebhookSecret(secret))
        if let giveUpAfter { hook.giveUpAfter = giveUpAfter }
        configuration.apps[0].webhooks = [hook]
        configuration.webhookSender.initialRetryDelay = .seconds(1)
        configuration.webhookSender.maximumRetryDelay = .seconds(1)
        configuration.housekeeping.statisticsInterval = .seconds(1)
    }

    /// Runs `body` with a gateway whose webhook receiver refuses every event (HTTP 500), its
    /// log kept at trace level; returns the log.
    static func withRefusingReceiver(
        _ backend: Backend, mock configureMock: (inout MockAPNSServer.Configuration) -> Void = { _ in },
        gateway configureGateway: (inout GatewayConfiguration, WebhookReceiver) -> Void, _ body: (GatewayHarness, WebhookReceiver) async throws -> Void
    ) async throws -> InMemoryLogHandler {
        let scratch = try ScratchDirectory()
        let receiver = try await WebhookReceiver(scratch: scratch, secret: secret, failing: Int.max / 2)
        defer { receiver.stop() }
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "gateway", factory: { _ in logs })
        logger.logLevel = .trace
        try await GatewayHarness.prepare(backend, mock: configureMock, gateway: { configureGateway(&$0, receiver) }) { configuration, mock, key in
            try await GatewayHarness.run(configuration, mock: mock, key: key, logger: logger) { harness in try await body(harness, receiver) }
        }
        return logs
    }

    /// Waits (at most `limit`) until `/metrics` shows every line of `expected`; returns whether
    /// it did, and the text last read.
    static func metrics(_ harness: GatewayHarness, showing expected: [String], within limit: Duration) async throws -> (Bool, String) {
        var text = ""
        let shown = try await eventually(within: limit, every: .milliseconds(200)) {
            text = try await metrics(harness)
            return expected.allSatisfy(text.contains)
        }
        return (shown, text)
    }

    /// The Prometheus text of `/metrics`.
    static func metrics(_ harness: GatewayHarness) async throws -> String {
        let response = try await harness.client.execute(TestClient.Request("/metrics", method: .get))
        return String(buffer: response.body ?? ByteBuffer())
    }

    /// The events a receiver took (answered 200 for), by ID.
    static func taken(_ receiver: WebhookReceiver) -> [String: JSONValue] {
        var events: [String: JSONValue] = [:]
        for record in receiver.records where record.status == 200 {
            if let event = try? JSONValue(parsing: Array(record.body.utf8)), let id = event["id"]?.stringValue { events[id] = event }
        }
        return events
    }

    @Test("a broadcast's events reach a receiver that fails at first: signed (checked by Python's hmac), re-sent with the same ID, counted", arguments: Backend.allCases)
    func delivered(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let receiver = try await WebhookReceiver(scratch: scratch, secret: Self.secret, failing: 3)
        defer { receiver.stop() }
        try await GatewayHarness.run(
            backend,
            mock: { mock in
                mock.script.unregister(token(2), since: Date().addingTimeInterval(3600))
                mock.script.fail(token(3), with: .reject(.badDeviceToken))
            },
            gateway: { Self.configure(&$0, receiver: receiver) }
        ) { harness in
            try await harness.register(0..<4)
            let id = try await harness.send(["all": true])
            try await harness.waitUntilDone(id)
            // Five events: the completion, two devices retired, two deliveries failed.
            let arrived = await eventually(within: .seconds(60), every: .milliseconds(100)) { Self.taken(receiver).count >= 5 }
            let events = Self.taken(receiver)
            #expect(arrived && events.count == 5, "\(receiver.records.map { "\($0.status) \($0.body)" })")

            let records = receiver.records
            #expect(!records.isEmpty && records.allSatisfy(\.valid), "every request's signature checks out")
            let refused = records.filter { $0.status == 500 }
            #expect(refused.count == 3)
            for record in refused {
                let event = try JSONValue(parsing: Array(record.body.utf8))
                #expect(event["id"]?.stringValue.flatMap { events[$0] } != nil, "a refused event is sent again with the same ID")
            }
            let now = Int(Date().timeIntervalSince1970)
            #expect(records.allSatisfy { ($0.timestamp ?? 0) > now - 300 && ($0.timestamp ?? 0) <= now + 1 }, "t is the time of sending")

            let completed = try #require(events.values.first { $0["type"] == "notification.completed" })
            #expect(completed["app"]?.stringValue == appID && completed["data"]?["notification"]?.stringValue == id)
            #expect(completed["data"]?["counts"] == ["accepted": 2, "rejected": 2, "failed": 0, "optedOut": 0, "capped": 0, "digested": 0])
            #expect(completed["data"]?["reasons"]?["rejected"] == ["BadDeviceToken": 1, "Unregistered": 1])
            let retired = events.values.filter { $0["type"] == "device.retired" }
            #expect(Set(retired.compactMap { $0["data"]?["token"]?.stringValue }) == [token(2), token(3)])
            #expect(retired.first { $0["data"]?["token"]?.stringValue == token(2) }?["data"]?["timestamp"]?.stringValue != nil)
            let failed = events.values.filter { $0["type"] == "delivery.failed" }
            #expect(Set(failed.compactMap { $0["data"]?["token"]?.stringValue }) == [token(2), token(3)])

            // The receiver has answered all five; the gateway records each answer after it.
            let (counted, text) = try await Self.metrics(harness, showing: [
                #"herald_webhook_events_pending{app="shop",type="notification.completed"} 0"#,
                #"herald_webhook_events_sent_total{app="shop",type="device.retired"} 2"#,
                #"herald_webhook_events_sent_total{app="shop",type="delivery.failed"} 2"#,
            ], within: .seconds(30))
            #expect(counted, "\(text)")
            #expect(text.contains(#"herald_webhook_events_sent_total{app="shop",type="device.retired"} 2"#), "\(text)")
            #expect(text.contains(#"herald_webhook_attempts_failed_total{app="shop""#), "\(text)")
            #expect(!text.contains(Self.secret))
        }
    }

    @Test("a receiver that never takes its events: each is dropped at the give-up time, with a metric and a log line, never the secret", arguments: Backend.allCases)
    func givenUp(backend: Backend) async throws {
        let logs = try await Self.withRefusingReceiver(backend, gateway: { Self.configure(&$0, receiver: $1, giveUpAfter: .seconds(2)) }) { harness, receiver in
            try await harness.register(0..<2)
            try await harness.waitUntilDone(try await harness.send(["all": true]))
            let (dropped, text) = try await Self.metrics(harness, showing: [
                #"herald_webhook_events_dropped_total{app="shop",type="notification.completed"} 1"#,
            ], within: .seconds(60))
            #expect(dropped, "\(text)")
            #expect(try await harness.gateway.store.pendingWebhookEvents().isEmpty, "it left the outbox")
            #expect(!receiver.records.isEmpty && receiver.records.allSatisfy { $0.status == 500 && $0.valid })
        }
        let entries = logs.entries.map { "\($0.message) \($0.metadata)" }
        #expect(entries.contains { $0.contains("webhook event dropped") && $0.contains("notification.completed") }, "\(entries.suffix(20))")
        #expect(!entries.contains { $0.contains(Self.secret) }, "the secret is never logged")
    }

    @Test("a full outbox: events past webhookSender.maximumPendingPerApp are refused, counted and logged once; the broadcast itself is not held", arguments: Backend.allCases)
    func refusedWhenFull(backend: Backend) async throws {
        let logs = try await Self.withRefusingReceiver(backend, mock: { mock in
            mock.script.unregister(token(2), since: Date().addingTimeInterval(3600))
            mock.script.fail(token(3), with: .reject(.badDeviceToken))
        }, gateway: {
            Self.configure(&$0, receiver: $1)
            $0.webhookSender.maximumPendingPerApp = 2
        }) { harness, _ in
            try await harness.register(0..<4)
            let done = try await harness.waitUntilDone(try await harness.send(["all": true]))
            #expect(done["status"] == "done" && done["platforms"]?["apns"]?["accepted"]?.intValue == 2, "\(done.jsonString)")
            // Written in the completion's order: the two delivery.failed fill the outbox; the
            // two device.retired and the notification.completed find it full.
            let (counted, text) = try await Self.metrics(harness, showing: [
                #"herald_webhook_events_refused_total{app="shop",type="device.retired"} 2"#,
                #"herald_webhook_events_refused_total{app="shop",type="notification.completed"} 1"#,
            ], within: .seconds(30))
            #expect(counted, "\(text)")
            let pending = try await harness.gateway.store.pendingWebhookEvents()
            #expect(pending.map(\.count).reduce(0, +) == 2 && pending.allSatisfy { $0.type == .deliveryFailed }, "\(pending)")
        }
        let full = logs.entries.filter { $0.message.description.contains("webhook outbox of this app is full") }
        #expect(full.count == 1, "logged once a minute at most: \(full.map(\.metadata))")
    }

    @Test("hostile receivers: one that never answers is cut off at the timeout, its event dropped at the give-up time; one with an endless answer is read no further", arguments: Backend.allCases)
    func hostileReceivers(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let silent = try await WebhookReceiver(scratch: scratch, secret: Self.secret, mode: .hang)
        defer { silent.stop() }
        let flooding = try await WebhookReceiver(scratch: scratch, secret: Self.secret, mode: .flood)
        defer { flooding.stop() }
        try await GatewayHarness.run(
            backend,
            gateway: { configuration in
                Self.configure(&configuration, receiver: silent, giveUpAfter: .seconds(2))
                configuration.apps[0].webhooks[0].events = [.notificationCompleted]
                var endless = GatewayConfiguration.Webhook(url: flooding.url, secret: WebhookSecret(Self.secret), events: [.notificationCompleted])
                endless.giveUpAfter = .seconds(2)
                configuration.apps[0].webhooks.append(endless)
                configuration.webhookSender.timeout = .seconds(1)
            }
        ) { harness in
            try await harness.register(0..<1)
            try await harness.waitUntilDone(try await harness.send(["all": true]))
            let (settled, text) = try await Self.metrics(harness, showing: [
                #"herald_webhook_events_dropped_total{app="shop",type="notification.completed"} 1"#,
                #"herald_webhook_events_sent_total{app="shop",type="notification.completed"} 1"#,
            ], within: .seconds(60))
            #expect(settled, "the silent receiver's event dropped, the flooding one's sent: \(text)")
            #expect(!silent.records.isEmpty && !flooding.records.isEmpty)
            #expect(try await harness.gateway.store.pendingWebhookEvents().isEmpty)
        }
    }

    @Test("an app without webhooks writes nothing to the outbox; a webhook added by a reload gets the events from then on", arguments: Backend.allCases)
    func addedByReload(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let receiver = try await WebhookReceiver(scratch: scratch, secret: Self.secret)
        defer { receiver.stop() }
        try await GatewayHarness.run(backend) { harness in
            try await harness.register(0..<3)
            let before = try await harness.send(["all": true], alert: "before")
            try await harness.waitUntilDone(before)
            #expect(try await harness.gateway.store.pendingWebhookEvents().isEmpty, "no webhook: no row")
            var configuration = harness.gateway.configuration
            Self.configure(&configuration, receiver: receiver)
            try await harness.gateway.reload(configuration)
            let after = try await harness.send(["all": true], alert: "after")
            try await harness.waitUntilDone(after)
            let arrived = await eventually(within: .seconds(30), every: .milliseconds(100)) { !Self.taken(receiver).isEmpty }
            let notifications = Self.taken(receiver).values.compactMap { $0["data"]?["notification"]?.stringValue }
            #expect(arrived && notifications == [after], "\(notifications)")
        }
    }

    @Test("the decision after an attempt: 2xx sent; otherwise retried with back-off until the give-up time, then dropped")
    func decisions() {
        let created = Date(timeIntervalSince1970: 1_000_000)
        let backoff = Backoff(initial: .seconds(5), maximum: .seconds(60))
        func decide(_ status: Int?, attempt: Int, after seconds: Double) -> WebhookDecision {
            .decide(
                status: status, attempt: attempt, createdAt: created, giveUpAfter: .seconds(86_400), now: created.addingTimeInterval(seconds), backoff: backoff,
                random: 0.5
            )
        }
        #expect(decide(200, attempt: 1, after: 0) == .sent)
        #expect(decide(204, attempt: 9, after: 99_999) == .sent)
        #expect(decide(500, attempt: 1, after: 0) == .retry(at: created.addingTimeInterval(5)))
        #expect(decide(nil, attempt: 3, after: 100) == .retry(at: created.addingTimeInterval(120)), "unreachable: retried, 5 s doubled twice")
        #expect(decide(301, attempt: 10, after: 1000) == .retry(at: created.addingTimeInterval(1060)), "a redirect is not followed; at most the maximum")
        #expect(decide(500, attempt: 10, after: 86_390) == .drop, "past the give-up time (24 h)")
    }

    @Test("Herald-Signature: t and the hex HMAC-SHA256 of \"<t>.<body>\" (RFC 4231's test case 2 key and text)")
    func signature() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?"; here the data is "<t>." and the body.
        let header = WebhookSender.signature(body: Array("what do ya want for nothing?".utf8), timestamp: 0, secret: WebhookSecret("Jefe"))
        #expect(header.hasPrefix("t=0,v1=") && header.count == "t=0,v1=".count + 64)
        #expect(WebhookSender.origin("https://hooks.example.com:8443/path/with-token?q=1") == "https://hooks.example.com:8443")
        #expect("\(WebhookSecret("s3cret"))" == "<webhook secret>")
    }
}
