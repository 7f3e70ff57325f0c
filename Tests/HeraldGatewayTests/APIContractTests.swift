import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// The API's contract in router mode: routes and the OpenAPI document agree, every answer has
/// its documented shape, keys and apps are enforced, and bad input gets a 4xx saying what was
/// wrong (never a 500).
@Suite("API contract", .timeLimit(.minutes(6)))
struct APIContractTests {
    @Test("the routes served are exactly the operations of openapi.json, which is served as it is")
    func routesMatchDocument() async throws {
        let scratch = try ScratchDirectory()
        let configuration = GatewayConfiguration(
            database: try StoreURL("sqlite:" + scratch.file("routes.db")),
            apps: [.init(id: appID, topic: bundleID, environment: .sandbox, credentials: .providerToken(ProviderKey.generate()))], apiKeys: []
        )
        let gateway = try HeraldGateway(configuration: configuration, roles: .api)
        let served = Set(gateway.api.router().routes.map { "\($0.method.rawValue) \($0.path)" })
        let document = try OpenAPIContract(bytes: OpenAPIDocument.bytes)
        #expect(served == document.operations, "served but not documented: \(served.subtracting(document.operations)); documented but not served: \(document.operations.subtracting(served))")
        #expect(document.root["openapi"]?.stringValue?.hasPrefix("3.") == true)
        // A workers-only process serves the probes, the metrics and the document only.
        let probes = Set(gateway.api.router(includesV1: false).routes.map { "\($0.method.rawValue) \($0.path)" })
        #expect(probes == ["GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json"])

        try await RouterHarness.run { api in
            let answer = try await api.call(.get, "/openapi.json", key: .some(nil))
            #expect(answer.status == 200 && answer.json == document.root)
        }
    }

    @Test("notifications: an app's are listed newest first, a page at a time, by status; another app's never")
    func listNotifications() async throws {
        try await RouterHarness.run { api in
            let path = "/v1/apps/\(appID)/notifications"
            var ids: [String] = []
            for number in 0..<5 {
                let queued = try await api.call(.post, path, body: #"{"to": {"tokens": ["\#(token(number))"]}, "payload": {"aps": {"alert": "n\#(number)"}}}"#)
                ids.append(try #require(queued.json?["id"]?.stringValue))
            }
            _ = try await api.call(.post, "/v1/apps/other/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {}}}"#, key: api.otherKey)
            #expect(try await api.call(.delete, "/v1/notifications/\(ids[1])").status == 200)
            var listed: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try await api.call(.get, path + "?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                #expect(page.status == 200)
                listed += page.json?["notifications"]?.arrayItems.compactMap { $0["id"]?.stringValue } ?? []
                cursor = page.json?["next"]?.stringValue
                if cursor == nil { break }
            }
            #expect(listed == ids.reversed(), "newest first, each once, only this app's")
            let cancelled = try await api.call(.get, path + "?status=cancelled")
            #expect(cancelled.json?["notifications"]?.arrayItems.compactMap { $0["id"]?.stringValue } == [ids[1]])
            #expect(try await api.call(.get, path + "?status=lost").status == 400)
            #expect(try await api.call(.get, path, key: api.otherKey).status == 403)
        }
    }

    @Test("keys: none or unknown is 401, another app's is 403, an unknown app is 404; probes need none")
    func authorization() async throws {
        try await RouterHarness.run { api in
            let devices = "/v1/apps/\(appID)/devices"
            let none = try await api.call(.get, devices, key: .some(nil))
            #expect(none.status == 401 && none.json?["error"]?["code"]?.stringValue == "unauthorized")
            #expect(none.headers[.wwwAuthenticate] == "Bearer")
            #expect(try await api.call(.get, devices, key: "hk_not-a-key").status == 401)
            #expect(try await api.call(.get, devices, key: "").status == 401)
            let forbidden = try await api.call(.get, devices, key: api.otherKey)
            #expect(forbidden.status == 403 && forbidden.json?["error"]?["code"]?.stringValue == "forbidden")
            #expect(try await api.call(.get, "/v1/apps/nowhere/devices").status == 404)

            // Another app's notification is not this key's to read, list or cancel.
            let queued = try await api.call(
                .post, "/v1/apps/other/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "x"}}}"#, key: api.otherKey
            )
            #expect(queued.status == 202)
            let id = try #require(queued.json?["id"]?.stringValue)
            #expect(try await api.call(.get, "/v1/notifications/\(id)").status == 403)
            #expect(try await api.call(.get, "/v1/notifications/\(id)/deliveries").status == 403)
            #expect(try await api.call(.delete, "/v1/notifications/\(id)").status == 403)
            #expect(try await api.call(.get, "/v1/notifications/\(id)", key: api.otherKey).status == 200)

            for probe in ["/healthz", "/readyz", "/metrics"] {
                #expect(try await api.call(.get, probe, key: .some(nil)).status == 200, "\(probe)")
            }
        }
    }

    @Test("devices: 201 then 200, read, list with a cursor, delete 204 then 404")
    func deviceLifecycle() async throws {
        try await RouterHarness.run { api in
            let path = "/v1/apps/\(appID)/devices/" + token(7).uppercased()
            let created = try await api.call(.put, path, body: #"{"user": "ann", "tags": ["beta", "ios"], "badge": 2}"#)
            #expect(created.status == 201)
            #expect(created.json?["token"]?.stringValue == token(7) && created.json?["status"]?.stringValue == "active")
            #expect(created.json?["tags"] == ["beta", "ios"] && created.json?.count("badge") == 2)
            let again = try await api.call(.put, path, body: "")
            #expect(again.status == 200 && again.json?["user"]?.stringValue == "ann", "an empty body keeps what is stored")
            let cleared = try await api.call(.put, path, body: #"{"user": null}"#)
            #expect(cleared.json?["user"] == .null)
            #expect(try await api.call(.get, path).json?["tags"] == ["beta", "ios"])

            for number in 0..<5 { try await api.call(.put, "/v1/apps/\(appID)/devices/\(token(number))", body: #"{"tags": ["five"]}"#) }
            var listed: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try await api.call(.get, "/v1/apps/\(appID)/devices?tag=five&limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                listed += page.json?["devices"]?.arrayItems.compactMap { $0["token"]?.stringValue } ?? []
                cursor = page.json?["next"]?.stringValue
                if cursor == nil { break }
            }
            // Pages in the store's order (SQLite: by a hash of the token), each device once.
            #expect(listed.count == 5 && listed.sorted() == (0..<5).map(token))

            #expect(try await api.call(.delete, path).status == 204)
            #expect(try await api.call(.delete, path).status == 404)
            #expect(try await api.call(.get, path).status == 404)
        }
    }

    @Test("bad input: each a 4xx whose message names what was wrong")
    func badInput() async throws {
        try await RouterHarness.run { api in
            let notifications = "/v1/apps/\(appID)/notifications"
            let device = "/v1/apps/\(appID)/devices/\(token(1))"
            let cases: [(HTTPRequest.Method, String, String?, String?, Int, String)] = [
                (.post, notifications, #"{"to": {"all": true}, "payload": {"aps": {}}"#, nil, 400, "not valid JSON"),
                (.post, notifications, "", nil, 400, "empty"),
                (.post, notifications, "[1]", nil, 400, "JSON object"),
                (.post, notifications, #"{"payload": {}}"#, nil, 400, "to: is required"),
                (.post, notifications, #"{"to": {"all": true}}"#, nil, 400, "payload: is required"),
                (.post, notifications, #"{"to": {"all": true}, "payload": "hi"}"#, nil, 400, "payload: must be a JSON object"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "sound": 1}"#, nil, 400, "sound: unknown field"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "priority": "high"}"#, nil, 400, "priority: must be an integer"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "priority": 7}"#, nil, 400, "priority must be 10, 5 or 1"),
                (.post, notifications, #"{"to": {"all": false}, "payload": {}}"#, nil, 400, "to.all: must be true"),
                (.post, notifications, #"{"to": {"all": true, "tags": ["a"]}, "payload": {}}"#, nil, 400, "exactly one"),
                (.post, notifications, #"{"to": {"tokens": []}, "payload": {}}"#, nil, 400, "at least one"),
                (.post, notifications, #"{"to": {"tokens": ["xyz"]}, "payload": {}}"#, nil, 400, "to.tokens[0]"),
                (.post, notifications, #"{"to": {"tags": ["no spaces"]}, "payload": {}}"#, nil, 400, "to.tags[0]"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "pushType": "fax"}"#, nil, 400, "pushType"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "pushType": "background", "priority": 10}"#, nil, 400, "priority 5"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "collapseID": "\#(String(repeating: "c", count: 65))"}"#, nil, 400, "collapse"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "badge": "decrement"}"#, nil, 400, "badge"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {"aps": {"alert": "\#(String(repeating: "x", count: 4100))"}}}"#, nil, 400, "4096"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "pushType": "liveactivity"}"#, nil, 400, "pushType: liveactivity"),
                (.post, notifications, #"{"to": {"all": true}, "payload": {}, "pushType": "mdm"}"#, nil, 400, "pushType: mdm"),
                (.put, device, #"{"kind": "pager"}"#, nil, 400, "kind: must be one of alert, voip"),
                (.put, device, #"{"kind": 1}"#, nil, 400, "kind: must be a string"),
                (.put, device, #"{"kind": "liveactivity"}"#, nil, 400, "activityType: a liveactivity token needs"),
                (.put, device, #"{"kind": "liveactivity", "activityType": "Bad Name"}"#, nil, 400, "activityType"),
                (.put, device, #"{"kind": "voip", "activityType": "Delivery"}"#, nil, 400, "activityType: only a liveactivity token"),
                (.get, "/v1/apps/\(appID)/devices?kind=pager", nil, nil, 400, "kind must be one of"),
                (.put, device, #"{"badge": -1}"#, nil, 400, "badge"),
                (.put, device, #"{"tags": "beta"}"#, nil, 400, "tags: must be an array"),
                (.put, device, #"{"token": "\#(token(2))"}"#, nil, 400, "token: unknown field"),
                (.put, "/v1/apps/\(appID)/devices/nothex", nil, nil, 400, "device token"),
                (.get, "/v1/apps/\(appID)/devices?limit=0", nil, nil, 400, "limit"),
                (.get, "/v1/apps/\(appID)/devices?status=gone", nil, nil, 400, "status"),
                (.post, "/v1/apps/\(appID)/devices", "x", "text/csv", 415, "application/x-ndjson"),
                (.post, notifications, "{\"to\": {\"all\": true}, \"payload\": {\"a\": \"" + String(repeating: "x", count: 70_000) + "\"}}", nil, 413, "over"),
                (.get, "/v1/notifications/not-an-id", nil, nil, 404, "no notification"),
                (.get, "/v2/anything", nil, nil, 404, "no such route"),
            ]
            for (method, path, body, contentType, status, words) in cases {
                let answer = try await api.call(method, path, body: body, contentType: contentType)
                #expect(answer.status == status, "\(method) \(path) \(body?.prefix(80) ?? ""): \(answer.json?.jsonString ?? "")")
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(message.contains(words), "\(body.map { String($0.prefix(80)) } ?? path): '\(message)' should say '\(words)'")
            }
            // What APNs would refuse carries APNs's reason as the code.
            let large = try await api.call(.post, notifications, body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "\#(String(repeating: "x", count: 4100))"}}}"#)
            #expect(large.json?["error"]?["code"]?.stringValue == "PayloadTooLarge")
            let voip = try await api.call(.post, notifications, body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "\#(String(repeating: "x", count: 4100))"}}, "pushType": "voip"}"#)
            #expect(voip.status == 202, "voip payloads may be 5120 bytes")
        }
    }

    @Test("hostile bodies: random bytes and deep nesting get a 4xx, never a 500 or a crash")
    func hostileBodies() async throws {
        try await RouterHarness.run { api in
            var random = SplitMix64(seed: 11)
            let notifications = "/v1/apps/\(appID)/notifications"
            let pieces = ["{", "}", "[", "]", "\"", ":", ",", "to", "payload", "all", "true", "1e999", "-0", "\\u0000", "\u{7}", "null", " "]
            for _ in 0..<300 {
                let body = (0..<Int.random(in: 1...40, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
                let answer = try await api.call(.post, notifications, body: body)
                #expect((400..<500).contains(answer.status) || answer.status == 202, "\(body)")
            }
            let deep = String(repeating: "[", count: 100_000)
            #expect(try await api.call(.post, notifications, body: "{\"to\": \(deep)").status == 413)
            let nested = "{\"to\": {\"all\": true}, \"payload\": {\"a\": " + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000) + "}}"
            #expect(try await api.call(.post, notifications, body: nested).status == 400)
        }
    }

    @Test("bulk import: NDJSON and JSON arrays, bad lines reported by number and skipped, the rest registered")
    func bulkImport() async throws {
        try await RouterHarness.run { api in
            let path = "/v1/apps/\(appID)/devices"
            var lines = (0..<1000).map { #"{"token": "\#(token($0))", "user": "u\#($0 % 3)"}"# }
            lines[10] = "not json"
            lines[20] = #"{"token": "xyz"}"#
            lines[30] = #"{"token": "\#(token(30))", "badge": "many"}"#
            lines[40] = #"{"token": "\#(token(40))", "colour": "red"}"#
            lines[50] = "  "
            lines[60] = #"{"user": "nobody"}"#
            lines[70] = "{\"token\": \"\(token(70))\", \"user\": \"" + String(repeating: "x", count: 5000) + "\"}"
            let answer = try await api.call(.post, path, body: lines.joined(separator: "\r\n") + "\n", contentType: "application/x-ndjson")
            #expect(answer.status == 200)
            #expect(answer.json?.count("upserted") == 993, "\(answer.json?.jsonString ?? "")")
            #expect(answer.json?.count("errorCount") == 6)
            let errors = answer.json?["errors"]?.arrayItems ?? []
            #expect(errors.compactMap { $0.count("line") } == [11, 21, 31, 41, 61, 71])
            #expect(errors.first?["message"]?.stringValue?.contains("not valid JSON") == true)
            #expect(errors.last?["message"]?.stringValue?.contains("over 4096 bytes") == true)
            #expect(try await api.call(.get, path + "?user=u1&limit=1000").json?["devices"]?.arrayItems.count == 330, "333 users u1, less lines 11, 41 and 71")

            // A JSON array; strings may hold the array's own punctuation.
            let array = #"[{"token": "\#(token(2000))", "user": "a,b]c"}, {"token": "\#(token(2001))", "tags": ["x"]}, 7, {"token": "\#(token(2002))"}]"#
            let arrayAnswer = try await api.call(.post, path, body: array, contentType: "application/json")
            #expect(arrayAnswer.json?.count("upserted") == 3 && arrayAnswer.json?["errors"]?.arrayItems.first?.count("line") == 3, "\(arrayAnswer.json?.jsonString ?? "")")
            #expect(try await api.call(.get, path + "/\(token(2000))").json?["user"]?.stringValue == "a,b]c")

            let unclosed = try await api.call(.post, path, body: #"[{"token": "\#(token(3000))"}, {"tok"#)
            #expect(unclosed.json?.count("upserted") == 1 && unclosed.json?.count("errorCount") == 1)
            #expect(try await api.call(.post, path, body: #"{"token": "\#(token(1))"}"#).json?["errors"]?.arrayItems.first?["message"]?.stringValue?.contains("x-ndjson") == true)
            #expect(try await api.call(.post, path, body: "[]").json?.count("upserted") == 0)
        }
    }

    @Test("metrics: Prometheus text with bounded labels, requests counted by route template")
    func metrics() async throws {
        try await RouterHarness.run { api in
            for number in 0..<3 { try await api.call(.get, "/v1/apps/\(appID)/devices/\(token(number))") }
            try await api.call(.get, "/v1/random/\(UUID().uuidString)")
            let response = try await api.client.execute(uri: "/metrics", method: .get)
            let text = String(buffer: response.body)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
            #expect(text.contains(#"herald_api_requests_total{route="/v1/apps/{app}/devices/{token}",method="GET",status="404"} 3"#), "\(text)")
            #expect(text.contains(#"route="NotFound""#) || text.contains(#"route="unmatched""#))
            #expect(!text.contains(token(1)), "no label holds what a client sent")
            #expect(text.contains("herald_queue_pending_deliveries"))
        }
    }
}
