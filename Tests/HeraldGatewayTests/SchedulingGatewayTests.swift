import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HTTPTypes
import Testing

/// Scheduled and paced sending through the gateway's API to the real mock APNs, on both
/// backends: times are read from the mock's own receive times. (Local time and quiet hours are
/// tested in the store on a test's clock: `SchedulingTests`.)
@Suite("Gateway scheduling", .serialized, .timeLimit(.minutes(6)))
struct SchedulingGatewayTests {
    static func rfc3339(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Registers devices 0..<count in one import (lines of `{"token": …}` plus `extra`).
    static func importDevices(_ harness: GatewayHarness, _ count: Int, extra: (Int) -> String = { _ in "" }) async throws {
        let lines = (0..<count).map { #"{"token":"\#(token($0))"\#(extra($0))}"# }.joined(separator: "\n")
        let imported = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Array(lines.utf8), key: harness.key, contentType: "application/x-ndjson")
        #expect(imported.status == 200 && imported.json?.count("upserted") == count, "\(imported.json?.jsonString ?? "")")
    }

    @Test("sendAt: scheduled until its time, listed and cancellable meanwhile; every device received at or after it, by the mock's clock", arguments: Backend.allCases)
    func sendAt(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await Self.importDevices(harness, 20)
            // An hour ahead: scheduled whatever the machine's load, then cancelled, never sent.
            let later = try await harness.send(
                ["tokens": [.string(token(1))]], alert: "cancelled", extra: ["sendAt": .string(Self.rfc3339(Date().addingTimeInterval(3600)))])
            let waiting = try await harness.call(.get, "/v1/notifications/\(later)").json
            #expect(waiting?["status"]?.stringValue == "scheduled" && waiting?["schedule"]?["sendAt"]?.stringValue != nil, "\(waiting?.jsonString ?? "")")
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/notifications?status=scheduled").json?["notifications"]
            #expect(listed?.ids.contains(later) == true, "\(listed?.jsonString ?? "")")
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/notifications?status=queued").json?["notifications"]?.ids.contains(later) == false)

            // 3 s ahead: nothing before it (the mock's receive times), everything after it.
            let sendAt = Date().addingTimeInterval(3)
            let answer = try await harness.call(
                .post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "later"]], "sendAt": .string(Self.rfc3339(sendAt))]
            )
            #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
            let id = try #require(answer.json?["id"]?.stringValue)
            #expect(try await harness.call(.delete, "/v1/notifications/\(later)").json?["status"]?.stringValue == "cancelled")

            let done = try await harness.waitUntilDone(id, timeout: .seconds(60))
            #expect(done["status"]?.stringValue == "done" && done.count("accepted") == 20, "\(done.jsonString)")
            let received = harness.mock.accepted
            #expect(received.count == 20 && Set(received.map(\.token)) == Set((0..<20).map(token)))
            // Times are kept to the millisecond.
            #expect(received.allSatisfy { $0.receivedAt >= sendAt.addingTimeInterval(-0.002) }, "each received at or after its sendAt")
            #expect(harness.received(alert: "cancelled").isEmpty)
        }
    }

    @Test("pacing: 2,000 devices at 500 a second are received over at least 3 s, not in one burst", arguments: Backend.allCases)
    func pacing(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await Self.importDevices(harness, 2000)
            let queued = Date()
            let id = try await harness.send(["all": true], alert: "paced", extra: ["ratePerSecond": 500])
            let done = try await harness.waitUntilDone(id, timeout: .seconds(60))
            #expect(done.count("accepted") == 2000, "\(done.jsonString)")
            #expect(done["schedule"]?["ratePerSecond"]?.doubleValue == 500)
            let times = harness.mock.accepted.map(\.receivedAt).sorted()
            #expect(times.count == 2000)
            guard let last = times.last else { return }
            // Measured from the queueing, not the first receipt: a machine too busy to send the
            // first device on time still cannot send the last one early.
            #expect(last.timeIntervalSince(queued) >= 3, "the last received \(last.timeIntervalSince(queued)) s after queueing")
            // Not in one burst: no second holds nine in ten of them (evenly: about 500 each; a
            // loose bound, as a stalled machine sends what fell due meanwhile together).
            var start = 0
            var busiest = 0
            for (index, time) in times.enumerated() {
                while time.timeIntervalSince(times[start]) > 1 { start += 1 }
                busiest = max(busiest, index - start + 1)
            }
            #expect(busiest < 1800, "\(busiest) in one second")
        }
    }

    @Test("devices carry a time zone: registered, read back, imported; an unknown one is a 400 naming the field", arguments: [Backend.sqlite])
    func timeZones(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            let put = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", ["timeZone": "America/New_York"])
            #expect(put.status == 201 && put.json?["timeZone"]?.stringValue == "America/New_York", "\(put.json?.jsonString ?? "")")
            #expect(try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", ["user": "ann"]).json?["timeZone"]?.stringValue == "America/New_York", "kept when not given")
            try await Self.importDevices(harness, 3, extra: { #","timeZone":"\#(["Asia/Tokyo", "Europe/Berlin", "UTC"][$0])""# })
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(1))").json?["timeZone"]?.stringValue == "Europe/Berlin")
            for zone in ["Mars/Olympus_Mons", "CET", "", "+02:00"] {
                let bad = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(5))", ["timeZone": .string(zone)])
                #expect(bad.status == 400 && bad.json?["error"]?["message"]?.stringValue?.contains("timeZone") == true, "\(zone): \(bad.json?.jsonString ?? "")")
            }
        }
    }

    @Test("bad scheduling input is a 400 naming the field", arguments: [Backend.sqlite])
    func badInput(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            let far = Self.rfc3339(Date().addingTimeInterval(31 * 24 * 3600))
            let cases: [(String, JSONValue, String)] = [
                ("sendAt", "tomorrow at nine", "RFC 3339"),
                ("sendAt", "2026-13-01T09:00:00Z", "RFC 3339"),
                ("sendAt", .string(far), "30 days"),
                ("sendAt", 1_800_000_000, "string"),
                ("sendAtLocalTime", "25:00", "HH:MM"),
                ("sendAtLocalTime", "9:00", "HH:MM"),
                ("ratePerSecond", -5, "more than 0"),
                ("ratePerSecond", 0, "more than 0"),
                ("ratePerSecond", "fast", "number"),
                ("respectQuietHours", true, "quietHours"),
            ]
            for (field, value, words) in cases {
                let body: JSONValue = ["to": ["all": true], "payload": ["aps": ["alert": "x"]], field: value]
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", body)
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == 400 && message.contains(field) && message.contains(words), "\(field) \(value.jsonString): \(answer.json?.jsonString ?? "")")
            }
            #expect(harness.mock.accepted.isEmpty)
        }
    }
}

extension JSONValue {
    /// The `id` of each object of an array.
    fileprivate var ids: [String] {
        if case .array(let items) = self { return items.compactMap { $0["id"]?.stringValue } }
        return []
    }
}
