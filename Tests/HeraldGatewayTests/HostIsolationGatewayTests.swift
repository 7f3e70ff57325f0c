import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldTestSupport
import HTTPTypes
import HummingbirdTesting
import Testing

/// An APNs host that answers 503 for a while, through the real gateway and the real mock: the
/// gateway backs the host off instead of sending into the outage, fails nothing, and delivers
/// everything once the host answers again.
@Suite("Host isolation in the gateway", .serialized, .timeLimit(.minutes(6)))
struct HostIsolationGatewayTests {
    /// The APNs client's attempts per notification (its default retry policy): what one probe
    /// costs the host at most.
    static let attemptsPerProbe = 5

    @Test("APNs answering 503: requests fall to a few per probe, no device is failed, and every device is delivered once it recovers", arguments: Backend.allCases)
    func outage(backend: Backend) async throws {
        let devices = 1000
        try await GatewayHarness.run(backend, mock: { mock in
            mock.script.randomFaults = MockScript.RandomFaults(rate: 1, seed: 42, faults: [.reject(.serviceUnavailable)])
        }) { harness in
            let lines = (0..<devices).map { #"{"token": "\#(token($0))"}"# }.joined(separator: "\n") + "\n"
            let imported = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Array(lines.utf8), key: harness.key, contentType: "application/x-ndjson")
            #expect(imported.status == 200 && imported.json?["upserted"]?.intValue == devices, "\(imported.json?.jsonString ?? "")")
            let id = try await harness.send(["all": true], alert: "outage")

            // The first batches (200 devices each: the harness's batch size, at most two at once:
            // the harness's two workers that take broadcasts) go into the outage and open the
            // circuit; every other device is then held, not sent. From the second probe on, what
            // was under way when it opened has ended (the APNs client's five attempts).
            let inFlight = 2 * 200
            func observe(_ harness: GatewayHarness) async throws -> (requests: Int, probes: Int, held: Double, failed: Double) {
                let metrics = try await Self.metrics(harness)
                return (
                    harness.mock.requestCount, Int(metrics.value("herald_push_host_probes_total", ["app": appID, "platform": "apns"])),
                    metrics.value("herald_deliveries_total", ["app": appID, "outcome": "retry", "reason": "HostBackedOff"]),
                    metrics.value("herald_deliveries_total", ["app": appID, "outcome": "retry", "reason": "ServiceUnavailable"])
                )
            }
            var window = try await observe(harness)
            let settled = try await eventually(within: .seconds(120), every: .milliseconds(100)) {
                window = try await observe(harness)
                return window.probes >= 2
            }
            #expect(settled, "the host was backed off and probed: \(window)")
            #expect(window.failed + window.held >= Double(devices), "every device was sent once or held: \(window)")

            // Two more probes into the outage: the host sees only them (each one notification,
            // tried up to five times by the APNs client), and nothing fails.
            var now = window
            let probed = try await eventually(within: .seconds(120), every: .milliseconds(100)) {
                now = try await observe(harness)
                return now.probes >= window.probes + 2
            }
            #expect(probed, "probes went on: \(window) then \(now)")
            let probes = now.probes - window.probes
            // One probe may have been under way as the window began.
            #expect(now.requests - window.requests <= Self.attemptsPerProbe * (probes + 1), "\(now.requests - window.requests) requests for \(probes) probes")
            #expect(now.requests <= Self.attemptsPerProbe * (inFlight + now.probes + 1), "\(now.requests) in all: the batches under way, then probes")
            #expect(now.held > window.held, "devices came back for the probes, and were held again, unsent")
            let during = try #require(try await harness.call(.get, "/v1/notifications/\(id)").json)
            #expect(during.count("failed") == 0 && during["status"]?.stringValue == "sending", "\(during.jsonString)")

            // The host answers again: the next probe closes the circuit, and everything goes.
            harness.mock.updateScript { $0 = MockScript() }
            let done = try await harness.waitUntilDone(id, timeout: .seconds(150))
            #expect(done.count("accepted") == devices && done.count("failed") == 0, "\(done.jsonString)")
            let received = harness.received(alert: "outage")
            #expect(received.count == devices && (0..<devices).allSatisfy { received[token($0)] != nil })
            let after = try await Self.metrics(harness)
            #expect(after.value("herald_push_hosts_backed_off", ["app": appID, "platform": "apns"]) == 0)
        }
    }

    /// The gateway's `/metrics`, for reading counters by their labels.
    static func metrics(_ harness: GatewayHarness) async throws -> Exposition {
        let response = try await harness.client.execute(TestClient.Request("/metrics", method: .get, headers: HTTPFields(), body: nil))
        return Exposition(text: String(decoding: response.body.map { Array($0.readableBytesView) } ?? [], as: UTF8.self))
    }

    /// Prometheus text: the sum of a metric's samples whose labels include `labels`.
    struct Exposition {
        let text: String

        func value(_ name: String, _ labels: [String: String]) -> Double {
            var total = 0.0
            for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
                let matches = labels.allSatisfy { line.contains("\($0.key)=\"\($0.value)\"") }
                if matches, let value = line.split(separator: " ").last.flatMap({ Double($0) }) { total += value }
            }
            return total
        }
    }
}
