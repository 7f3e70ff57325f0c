import Foundation
import HTTPTypes
import NIOCore
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HummingbirdTesting
import Testing

/// Receipts through the gateway: each delivery carries its own, the public route takes them
/// once each and refuses what is not one, and the notification, its funnel and the app's event
/// stream show them.
@Suite("Receipts, funnels and the event stream", .timeLimit(.minutes(4)))
struct ReceiptGatewayTests {
    /// Each device's receipt, from what the mock APNs accepted.
    static func receipts(_ harness: GatewayHarness) -> [String: String] {
        var receipts: [String: String] = [:]
        for record in harness.mock.accepted {
            if let receipt = (try? JSONValue(parsing: record.payload))?["herald"]?.stringValue { receipts[record.token] = receipt }
        }
        return receipts
    }

    /// POSTs `body` to the receipts route with no key (as text/plain, as a service worker sends it).
    static func report(_ harness: GatewayHarness, _ body: JSONValue) async throws -> (status: Int, json: JSONValue?, headers: HTTPFields) {
        try await harness.raw(.post, "/v1/receipts", Array(body.jsonString.utf8), key: nil, contentType: "text/plain;charset=UTF-8")
    }

    @Test("each device gets its own receipt; received, opened, dismissed and clicked are counted once each, in the notification, its funnel and the event stream", arguments: Backend.allCases)
    func receiptsCounted(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await harness.register(1...3)
            // A notification made on a clock of its own, in 2027 (as tests do): the IDs made after it
            // in this process carry that time, and the day's funnel must still find today's.
            _ = try await harness.gateway.store.enqueue(
                NotificationRequest(app: appID, audience: .tokens([token(9)]), payload: Array(#"{"aps":{}}"#.utf8)), now: Date(timeIntervalSince1970: 1_800_000_000))
            let id = try await harness.send(["tokens": [.string(token(1)), .string(token(2)), .string(token(3))]], extra: ["payload": ["aps": ["alert": "Hi"], "orderID": "A-1"]])
            let done = try await harness.waitUntilDone(id)
            #expect(done.count("accepted") == 3)
            let receipts = Self.receipts(harness)
            #expect(receipts.count == 3 && Set(receipts.values).count == 3, "\(receipts)")
            #expect(receipts.values.allSatisfy { $0.utf8.count == 48 })
            // The caller's keys are as they were.
            let payload = try JSONValue(parsing: try #require(harness.mock.accepted.first).payload)
            #expect(payload["orderID"]?.stringValue == "A-1" && payload["aps"]?["alert"]?.stringValue == "Hi")

            let one = try #require(receipts[token(1)])
            let first = try await Self.report(harness, ["receipt": .string(one), "event": "received"])
            #expect(first.status == 202, "\(first.json?.jsonString ?? "")")
            #expect(first.json?["taken"]?.intValue == 1)
            #expect(first.headers[.accessControlAllowOrigin] == "*")
            // The same event again: taken, counted once.
            let again = try await Self.report(harness, ["receipt": .string(one), "event": "received"])
            #expect(again.status == 202)
            let batch = try await Self.report(harness, [
                "events": [
                    ["receipt": .string(one), "event": "opened"],
                    ["receipt": .string(receipts[token(2)]!), "event": "opened"],
                    ["receipt": .string(receipts[token(2)]!), "event": "dismissed"],
                    ["receipt": .string(receipts[token(3)]!), "event": "clicked", "action": "reply"],
                ]
            ])
            #expect(batch.status == 202 && batch.json?["taken"]?.intValue == 4, "\(batch.json?.jsonString ?? "")")
            let notification = try #require(try await harness.call(.get, "/v1/notifications/\(id)").json)
            #expect(notification["receipts"] == ["received": 1, "opened": 2, "dismissed": 1, "clicked": 1], "\(notification.jsonString)")

            let funnel = try #require(try await harness.call(.get, "/v1/notifications/\(id)/funnel").json)
            let apns = try #require(funnel["platforms"]?.arrayItems.first { $0["platform"]?.stringValue == "apns" })
            #expect(apns["sent"]?.intValue == 3 && apns["accepted"]?.intValue == 3 && apns["received"]?.intValue == 1, "\(funnel.jsonString)")
            // Opened: devices that opened it or chose an action.
            #expect(apns["opened"]?.intValue == 3 && apns["clicked"]?.intValue == 1 && apns["dismissed"]?.intValue == 1)
            #expect(apns["rates"]?["received"]?.doubleValue.map { abs($0 - 0.3333) < 0.001 } == true, "\(apns.jsonString)")
            #expect(apns["timeToReceivedMs"]?["p50"]?.intValue != nil && apns["timeToOpenedMs"]?["p95"]?.intValue != nil)
            #expect(funnel["total"]?["opened"]?.intValue == 3)

            let day = try #require(try await harness.call(.get, "/v1/apps/\(appID)/funnel?days=2").json)
            let today = try #require(day["days"]?.arrayItems.last, "\(day.jsonString)")
            #expect(today["notifications"]?.intValue == 1 && today["accepted"]?.intValue == 3 && today["received"]?.intValue == 1, "\(day.jsonString)")

            // The event stream: queued, accepted (the batch's devices), completed, then the receipts, in order.
            // On PostgreSQL a line shows once every older transaction of the cluster has ended: waited for, bounded.
            var lines = try await Self.events(harness, after: nil, limit: 1000)
            let receiptTypes: Set<String> = ["received", "opened", "dismissed", "clicked"]
            for _ in 0..<200 where lines.filter({ receiptTypes.contains($0["type"]?.stringValue ?? "") }).count < 5 {
                try await Task.sleep(for: .milliseconds(50))
                lines = try await Self.events(harness, after: nil, limit: 1000)
            }
            let types = lines.map { $0["type"]?.stringValue ?? "" }
            #expect(types.first == "queued" && types.contains("completed"), "\(types)")
            // The first request's line, then the batch's four (one transaction: in the order they are stored).
            #expect(types.suffix(5).first == "received" && types.suffix(4).sorted() == ["clicked", "dismissed", "opened", "opened"], "\(types)")
            let accepted = lines.filter { $0["type"]?.stringValue == "accepted" }.flatMap { $0["data"]?["devices"]?.arrayItems ?? [] }
            #expect(Set(accepted.compactMap(\.stringValue)) == Set((1...3).map(token)))
            let clicked = try #require(lines.last { $0["type"]?.stringValue == "clicked" })
            #expect(clicked["data"]?["device"]?.stringValue == token(3) && clicked["data"]?["action"]?.stringValue == "reply")
            // Read two at a time from a cursor: the same lines, none twice.
            var paged: [JSONValue] = []
            var cursor: String?
            for _ in 0..<20 {
                let page = try await Self.events(harness, after: cursor, limit: 2)
                if page.isEmpty { break }
                paged += page
                cursor = page.last?["cursor"]?.stringValue
            }
            #expect(paged == lines)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/events?after=x-1").status == 400)
        }
    }

    @Test("an iPhone, an Android phone and a browser each carry their own receipt (APNs payload, FCM data, the browser's message); the funnel counts each platform", arguments: Backend.allCases)
    func everyPlatform(backend: Backend) async throws {
        try await FCMGatewayTests.run(backend, browsers: true) { harness, fcm, browsers in
            #expect(try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", ["user": "ann"]).status == 201)
            let android = FCMGatewayTests.registrationToken(1)
            #expect(try await harness.call(.put, "/v1/apps/\(appID)/devices/\(android)", ["platform": "fcm", "user": "ann"]).status == 201)
            let safari = browsers.subscribe(applicationServerKey: Array(WebPushGatewayTests.vapid.publicKey.x963Representation))
            _ = try await WebPushGatewayTests.register(safari, user: "ann", harness: harness)
            let id = try await harness.send(["users": ["ann"]], extra: ["payload": ["aps": ["alert": "Hi"], "order": "7"]])
            let done = try await harness.waitUntilDone(id)
            #expect(done.count("accepted") == 3, "\(done.jsonString)")
            let apns = try #require(Self.receipts(harness)[token(1)])
            let message = try #require(fcm.received.first)
            let fromFCM = try #require(message.data["herald"], "\(message.message.jsonString)")
            #expect(message.data["order"] == "7")
            let shown = try JSONValue(parsing: try #require(browsers.received(for: safari).first?.plaintext))
            let fromBrowser = try #require(shown["herald"]?.stringValue, "\(shown.jsonString)")
            #expect(shown["notification"]?["title"]?.stringValue == "Hi")
            #expect(try ReceiptToken(parsing: apns).platform == .apns && ReceiptToken(parsing: fromFCM).platform == .fcm && ReceiptToken(parsing: fromBrowser).platform == .webpush)
            let taken = try await Self.report(harness, [
                "events": [
                    ["receipt": .string(apns), "event": "received"], ["receipt": .string(fromFCM), "event": "received"],
                    ["receipt": .string(fromBrowser), "event": "received"], ["receipt": .string(fromBrowser), "event": "clicked"],
                ]
            ])
            #expect(taken.status == 202 && taken.json?["taken"]?.intValue == 4, "\(taken.json?.jsonString ?? "")")
            let funnel = try #require(try await harness.call(.get, "/v1/notifications/\(id)/funnel").json)
            for platform in ["apns", "fcm", "webpush"] {
                let stages = funnel["platforms"]?.arrayItems.first { $0["platform"]?.stringValue == platform }
                #expect(stages?["accepted"]?.intValue == 1 && stages?["received"]?.intValue == 1, "\(platform): \(funnel.jsonString)")
            }
            #expect(funnel["total"]?["opened"]?.intValue == 1 && funnel["total"]?["received"]?.intValue == 3)
        }
    }

    /// The app's event stream from `cursor`, its NDJSON lines parsed.
    static func events(_ harness: GatewayHarness, after cursor: String?, limit: Int) async throws -> [JSONValue] {
        let path = "/v1/apps/\(appID)/events?limit=\(limit)" + (cursor.map { "&after=\($0)" } ?? "")
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(harness.key)"
        let response = try await harness.client.execute(TestClient.Request(path, method: .get, headers: headers))
        #expect(response.status.code == 200)
        #expect(response.headers[.contentType] == "application/x-ndjson")
        let bytes = response.body.map { Array($0.readableBytesView) } ?? []
        return try bytes.split(separator: UInt8(ascii: "\n")).map { try JSONValue(parsing: Array($0)) }
    }

    @Test("forged, altered, malformed and gone receipts are refused alike with a 4xx; the batch bound and body bound hold; CORS preflight", arguments: [Backend.sqlite])
    func refusals(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await harness.register(1...2)
            let id = try await harness.send(["tokens": [.string(token(1)), .string(token(2))]])
            _ = try await harness.waitUntilDone(id)
            let receipts = Self.receipts(harness)
            let one = try #require(receipts[token(1)])
            var bytes = try #require(Base64URL.decode(one))
            bytes[30] ^= 0x40
            let altered = Base64URL.encode(bytes)
            let refusedAltered = try await Self.report(harness, ["receipt": .string(altered), "event": "opened"])
            #expect(refusedAltered.status == 403 && refusedAltered.json?["error"]?["code"]?.stringValue == "receiptRefused", "\(refusedAltered.json?.jsonString ?? "")")
            #expect(refusedAltered.headers[.accessControlAllowOrigin] == "*")
            let malformed = try await Self.report(harness, ["receipt": "abc", "event": "opened"])
            #expect(malformed.status == 403 && malformed.json?["error"]?["message"]?.stringValue?.contains("malformed") == true)
            // A device deleted since: refused exactly as a forged receipt is (nothing tells it existed).
            let two = try #require(receipts[token(2)])
            #expect(try await harness.call(.delete, "/v1/apps/\(appID)/devices/\(token(2))").status == 204)
            let gone = try await Self.report(harness, ["receipt": .string(two), "event": "opened"])
            #expect(gone.status == 403 && gone.json == refusedAltered.json, "\(gone.json?.jsonString ?? "")")
            // A batch with some good: 202, the refused ones named by index.
            let mixed = try await Self.report(harness, ["events": [["receipt": .string(one), "event": "opened"], ["receipt": .string(altered), "event": "opened"]]])
            #expect(mixed.status == 202 && mixed.json?["taken"]?.intValue == 1 && mixed.json?["refused"]?.arrayItems.first?["index"]?.intValue == 1, "\(mixed.json?.jsonString ?? "")")
            // Bad requests, named.
            let unknownEvent = try await Self.report(harness, ["receipt": .string(one), "event": "liked"])
            #expect(unknownEvent.status == 400 && unknownEvent.json?["error"]?["message"]?.stringValue?.contains("event") == true)
            let actionOnOpened = try await Self.report(harness, ["receipt": .string(one), "event": "opened", "action": "x"])
            #expect(actionOnOpened.status == 400)
            let tooMany = try await Self.report(harness, ["events": .array(Array(repeating: ["receipt": .string(one), "event": "opened"], count: 101))])
            #expect(tooMany.status == 400 && tooMany.json?["error"]?["message"]?.stringValue?.contains("100") == true)
            let huge = try await harness.raw(.post, "/v1/receipts", Array(repeating: UInt8(ascii: " "), count: 40_000) + Array("{}".utf8), key: nil)
            #expect(huge.status == 413)
            let notJSON = try await harness.raw(.post, "/v1/receipts", Array("receipt=1".utf8), key: nil)
            #expect(notJSON.status == 400)
            // The preflight a page's JSON POST sends.
            let preflight = try await harness.raw(.options, "/v1/receipts", nil, key: nil)
            #expect(preflight.status == 204 && preflight.headers[.accessControlAllowOrigin] == "*" && preflight.headers[.accessControlAllowMethods]?.contains("POST") == true)
            // Only the first good one counted; the refusals by why.
            let notification = try #require(try await harness.call(.get, "/v1/notifications/\(id)").json)
            #expect(notification["receipts"]?["opened"]?.intValue == 1)
            let metrics = try await harness.client.execute(TestClient.Request("/metrics", method: .get))
            let text = String(buffer: metrics.body ?? ByteBuffer())
            #expect(text.contains("herald_receipts_refused_total{reason=\"forged\"} 3"), "\(text.split(separator: "\n").filter { $0.contains("receipts") })")
            #expect(text.contains("herald_receipts_refused_total{reason=\"malformed\"} 1"))
        }
    }

    @Test("a rotation signs new sends with a new slot while the old receipts still count; an app with receipts off sends none")
    func rotationAndOff() async throws {
        try await GatewayHarness.run(.sqlite) { harness in
            try await harness.register(1...1)
            let before = try await harness.send(["tokens": [.string(token(1))]], alert: "one")
            _ = try await harness.waitUntilDone(before)
            let old = try #require(Self.receipts(harness)[token(1)])
            let rotated = try await harness.call(.post, "/v1/apps/\(appID)/receipts/rotate", ["overlapSeconds": 600])
            #expect(rotated.status == 200 && rotated.json?["keys"]?.arrayItems.count == 2, "\(rotated.json?.jsonString ?? "")")
            #expect(try await harness.call(.post, "/v1/apps/\(appID)/receipts/rotate", ["overlapSeconds": 5]).status == 400)
            let after = try await harness.send(["tokens": [.string(token(1))]], alert: "two")
            _ = try await harness.waitUntilDone(after)
            let new = try #require(Self.receipts(harness)[token(1)])
            #expect(try ReceiptToken(parsing: new).slot != ReceiptToken(parsing: old).slot)
            #expect(try await Self.report(harness, ["receipt": .string(old), "event": "opened"]).status == 202)
            #expect(try await Self.report(harness, ["receipt": .string(new), "event": "opened"]).status == 202)
        }
        try await GatewayHarness.run(.sqlite, gateway: { configuration in
            configuration.apps[0].receipts.enabled = false
        }) { harness in
            try await harness.register(1...1)
            let id = try await harness.send(["tokens": [.string(token(1))]])
            _ = try await harness.waitUntilDone(id)
            #expect(harness.mock.accepted.count == 1)
            #expect(Self.receipts(harness).isEmpty)
        }
    }
}
