import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import Testing

/// What the console reads and how it is served: the apps a key may use, an app's summary and
/// activity, a notification's audience, and the page's files with headers that forbid what the
/// page never needs. (The page itself is driven in a real browser by `Tests/Browser`.)
@Suite("Console routes", .timeLimit(.minutes(6)))
struct ConsoleRoutesTests {
    @Test("apps: only those the key may use")
    func apps() async throws {
        try await RouterHarness.run { api in
            let mine = try await api.call(.get, "/v1/apps")
            #expect(mine.status == 200)
            #expect(mine.json?["apps"]?.arrayItems.compactMap { $0["id"]?.stringValue } == [appID])
            #expect(mine.json?["apps"]?.arrayItems.first?["topic"]?.stringValue == bundleID)
            #expect(mine.json?["apps"]?.arrayItems.first?["environment"]?.stringValue == "sandbox")
            let other = try await api.call(.get, "/v1/apps", key: api.otherKey)
            #expect(other.json?["apps"]?.arrayItems.compactMap { $0["id"]?.stringValue } == ["other"])
            #expect(try await api.call(.get, "/v1/apps", key: .some(nil)).status == 401)
        }
    }

    @Test("summary: devices by status, kind and environment, and the queue; another app's is 403", arguments: Backend.allCases)
    func summary(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            let devices = "/v1/apps/\(appID)/devices/"
            for number in 0..<4 { try await api.call(.put, devices + token(number), body: "") }
            try await api.call(.put, devices + token(4), body: #"{"kind": "voip"}"#)
            try await api.call(.put, devices + token(5), body: #"{"environment": "production"}"#)
            let queued = try await api.call(
                .post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"tokens": ["\#(token(0))", "\#(token(1))"]}, "payload": {"aps": {"alert": "x"}}}"#
            )
            #expect(queued.status == 202)

            let summary = try await api.call(.get, "/v1/apps/\(appID)/summary")
            #expect(summary.status == 200)
            let counts = try #require(summary.json?["devices"])
            #expect(counts.count("total") == 6)
            #expect(counts["byStatus"] == ["active": 6, "unregistered": 0, "invalid": 0])
            #expect(counts["byKind"] == ["alert": 5, "voip": 1], "kinds with devices only")
            // The app's environment is sandbox: devices registered without one count there.
            #expect(counts["byEnvironment"] == ["production": 1, "sandbox": 5])
            #expect(counts["byPlatform"] == ["apns": 6, "webpush": 0, "fcm": 0, "hms": 0])
            #expect(summary.json?["queue"] == ["pendingDeliveries": 2, "activeNotifications": 1])

            #expect(try await api.call(.get, "/v1/apps/\(appID)/summary", key: api.otherKey).status == 403)
            #expect(try await api.call(.get, "/v1/apps/nowhere/summary").status == 404)
        }
    }

    @Test("activity: one entry per minute, oldest first; minutes out of range is 400")
    func activity() async throws {
        try await RouterHarness.run { api in
            let path = "/v1/apps/\(appID)/activity"
            let hour = try await api.call(.get, path)
            #expect(hour.status == 200)
            let minutes = hour.json?["minutes"]?.arrayItems ?? []
            #expect(minutes.count == 60)
            let times = minutes.compactMap { $0["at"]?.stringValue }
            #expect(times == times.sorted() && Set(times).count == 60)
            #expect(try await api.call(.get, path + "?minutes=5").json?["minutes"]?.arrayItems.count == 5)
            for bad in ["0", "1441", "-1", "x", "1e3", ""] {
                let answer = try await api.call(.get, path + "?minutes=\(bad)")
                #expect(answer.status == 400 && answer.json?["error"]?["message"]?.stringValue?.contains("minutes") == true, "minutes=\(bad)")
            }
            #expect(try await api.call(.get, path, key: api.otherKey).status == 403)
        }
    }

    @Test("a notification names its audience: its type, how many, and the first ten")
    func audience() async throws {
        try await RouterHarness.run { api in
            let tokens = (0..<12).map { "\"\(token($0))\"" }.joined(separator: ",")
            let queued = try await api.call(.post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"tokens": [\#(tokens)]}, "payload": {"aps": {}}}"#)
            let id = try #require(queued.json?["id"]?.stringValue)
            let audience = try await api.call(.get, "/v1/notifications/\(id)").json?["audience"]
            #expect(audience?["type"]?.stringValue == "tokens" && audience?.count("count") == 12)
            #expect(audience?["sample"]?.arrayItems.compactMap(\.stringValue) == (0..<10).map(token))
            let all = try await api.call(.post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {}}}"#)
            let listed = try await api.call(.get, "/v1/apps/\(appID)/notifications?limit=1")
            #expect(listed.json?["notifications"]?.arrayItems.first?["id"] == all.json?["id"])
            #expect(listed.json?["notifications"]?.arrayItems.first?["audience"] == ["type": "all", "count": 0, "sample": []])
        }
    }

    @Test("the API key the console sends is never logged, whatever the answer, even at trace level")
    func keyNeverLogged() async throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "api", factory: { _ in logs })
        logger.logLevel = .trace
        let wrongKey = "hk_a-wrong-key-\(UUID().uuidString)"
        try await RouterHarness.run(logger: logger) { api in
            for path in ["/v1/apps", "/v1/apps/\(appID)/summary", "/v1/apps/\(appID)/devices/\(token(1))", "/v1/apps/other/summary", "/v1/apps/\(appID)/activity?minutes=0"] {
                try await api.call(.get, path)
                try await api.call(.get, path, key: wrongKey)
            }
            try await api.call(.post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"tokens": [""]}, "payload": {"aps": {}}}"#)
            try await api.call(.post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"users": ["u"]}, "payload": {"aps": {}}}"#)
        }
        let entries = logs.entries
        #expect(!entries.isEmpty, "trace logging saw the requests")
        for entry in entries {
            let text = "\(entry.message) \(entry.metadata)"
            #expect(!text.contains("hk_"), "\(text)")
        }
    }

    @Test("the console's files: no key needed, a policy of its own origin only, never framed")
    func files() async throws {
        try await RouterHarness.run { api in
            for (path, type) in [("/console", "text/html"), ("/console/console.js", "text/javascript"), ("/console/console.css", "text/css")] {
                let answer = try await api.call(.get, path, key: .some(nil))
                #expect(answer.status == 200, "\(path)")
                #expect(answer.headers[.contentType]?.hasPrefix(type) == true, "\(path)")
                let policy = answer.headers[.contentSecurityPolicy] ?? ""
                #expect(policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe"), "\(path): \(policy)")
                #expect(answer.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
                #expect(answer.headers[.xContentTypeOptions] == "nosniff")
            }
            #expect(try await api.call(.get, "/console/other.js", key: .some(nil)).status == 404)
        }
    }
}

/// The Live Activity and channel routes' answers, each checked against the OpenAPI document by
/// the harness: statuses and shapes, bad input named.
@Suite("Activity and channel routes' contract", .timeLimit(.minutes(6)))
struct ActivityContractTests {
    @Test("tokens 201 then 200, read, events 202, end then 409, unknown 404, bad input 400; another app's key 403")
    func activities() async throws {
        try await RouterHarness.run { api in
            let base = "/v1/apps/\(appID)/activities/act-1"
            #expect(try await api.call(.put, base + "/tokens/" + token(1), body: #"{"user": "ann"}"#).status == 201)
            #expect(try await api.call(.put, base + "/tokens/" + token(1), body: "").status == 200)
            #expect(try await api.call(.put, base + "/tokens/xyz").status == 400)
            #expect(try await api.call(.put, base + "/tokens/" + token(2), body: #"{"environment": "moon"}"#).status == 400)
            let read = try await api.call(.get, base)
            #expect(read.status == 200 && read.json?["tokens"]?.arrayItems.first?["user"] == "ann")
            #expect(try await api.call(.get, "/v1/apps/\(appID)/activities/nope").status == 404)
            #expect(try await api.call(.get, "/v1/apps/\(appID)/activities/bad%20id").status == 400)
            #expect(try await api.call(.post, base + "/events", body: #"{"event": "update", "contentState": {"n": 1}}"#).status == 202)
            #expect(try await api.call(.post, base + "/events", body: #"{"event": "end", "contentState": {}}"#).status == 202)
            let again = try await api.call(.post, base + "/events", body: #"{"event": "end", "contentState": {}}"#)
            #expect(again.status == 409 && again.json?["error"]?["code"] == "conflict")
            #expect(try await api.call(.put, base + "/tokens/" + token(3)).status == 409)
            #expect(try await api.call(.delete, base + "/tokens/" + token(1)).status == 204)
            #expect(try await api.call(.delete, base + "/tokens/" + token(1)).status == 404)
            let start = #"{"to": {"users": ["ann"]}, "activityType": "Delivery", "attributes": {}, "contentState": {}, "alert": "Hi"}"#
            let started = try await api.call(.post, "/v1/apps/\(appID)/activities", body: start)
            #expect(started.status == 202 && started.json?["targeted"] == 0)
            let audience = try await api.call(.get, "/v1/notifications/\(try #require(started.json?["id"]?.stringValue))")
            #expect(audience.json?["pushType"] == "liveactivity")
            #expect(try await api.call(.post, "/v1/apps/\(appID)/activities", body: start, key: api.otherKey).status == 403)
            let tooBig = #"{"to": {"all": true}, "activityType": "A", "attributes": {"x": "\#(String(repeating: "a", count: 6000))"}, "contentState": {}, "alert": "Hi"}"#
            let refused = try await api.call(.post, "/v1/apps/\(appID)/activities", body: tooBig)
            #expect(refused.status == 400 && refused.json?["error"]?["code"] == "PayloadTooLarge", "APNs's reason as the code")
        }
    }

    @Test("channels: listed empty; an event to or delete of an unknown channel 404; a bad storage policy 400, refused before any request to APNs")
    func channels() async throws {
        try await RouterHarness.run { api in
            let listed = try await api.call(.get, "/v1/apps/\(appID)/channels")
            #expect(listed.status == 200 && listed.json?["channels"] == [])
            #expect(try await api.call(.post, "/v1/apps/\(appID)/channels/bm9uZQ%3D%3D/events", body: #"{"event": "update", "contentState": {}}"#).status == 404)
            #expect(try await api.call(.delete, "/v1/apps/\(appID)/channels/bm9uZQ%3D%3D").status == 404)
            #expect(try await api.call(.post, "/v1/apps/\(appID)/channels", body: #"{"storagePolicy": "sometimes"}"#).status == 400)
        }
    }
}
