import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HTTPTypes
import Testing

/// The gateway's behaviour through its real HTTP API, sending to the real mock APNs over TLS, on
/// both backends.
@Suite("Gateway delivery", .serialized, .timeLimit(.minutes(6)))
struct GatewayDeliveryTests {
    @Test("token kinds: a push type reaches only the tokens of its kind, with its topic; a registered token of another kind is rejected, never sent", arguments: Backend.allCases)
    func tokenKinds(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            // 0..<6 alert tokens (the default), 6..<10 voip, 10 a widgets token; even numbers tagged.
            try await harness.register(0..<6, user: { _ in "ann" }, tags: { $0 % 2 == 0 ? ["even"] : [] })
            for number in 6..<11 {
                let kind = number < 10 ? "voip" : "widgets"
                let answer = try await harness.call(
                    .put, "/v1/apps/\(appID)/devices/\(token(number))", ["kind": .string(kind), "user": "ann", "tags": number % 2 == 0 ? ["even"] : []]
                )
                #expect(answer.status == 201 && answer.json?["kind"]?.stringValue == kind, "\(answer.json?.jsonString ?? "")")
            }
            func send(_ to: JSONValue, pushType: String, marker: String) async throws -> JSONValue {
                let payload: JSONValue = pushType == "voip" ? ["aps": [:], "marker": .string(marker)] : ["aps": ["alert": .string(marker)], "marker": .string(marker)]
                let body: JSONValue = ["to": to, "payload": payload, "pushType": .string(pushType)]
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", body)
                #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
                return try await harness.waitUntilDone(try #require(answer.json?["id"]?.stringValue))
            }
            func received(_ marker: String) -> [String: String] {
                var topics: [String: String] = [:]
                for record in harness.mock.accepted where (try? JSONValue(parsing: record.payload))?["marker"]?.stringValue == marker {
                    topics[record.token] = "\(record.pushType)@\(record.topic)"
                }
                return topics
            }
            let voipAll = try await send(["all": true], pushType: "voip", marker: "voip-all")
            #expect(voipAll.count("targeted") == 4 && voipAll["targetedByKind"]?["voip"]?.intValue == 4, "\(voipAll.jsonString)")
            #expect(received("voip-all") == Dictionary(uniqueKeysWithValues: (6..<10).map { (token($0), "voip@\(bundleID).voip") }))

            let alertAll = try await send(["all": true], pushType: "alert", marker: "alert-all")
            #expect(alertAll.count("targeted") == 6 && alertAll["targetedByKind"]?["alert"]?.intValue == 6)
            #expect(Set(received("alert-all").keys) == Set((0..<6).map(token)))

            let voipTags = try await send(["tags": ["even"]], pushType: "voip", marker: "voip-tags")
            #expect(voipTags.count("targeted") == 2 && Set(received("voip-tags").keys) == [token(6), token(8)])
            let voipUser = try await send(["users": ["ann"]], pushType: "voip", marker: "voip-user")
            #expect(voipUser.count("targeted") == 4 && Set(received("voip-user").keys) == Set((6..<10).map(token)))
            let widgets = try await send(["users": ["ann"]], pushType: "widgets", marker: "widgets")
            #expect(widgets.count("targeted") == 1 && received("widgets") == [token(10): "widgets@\(bundleID).push-type.widgets"])

            // Explicit tokens: a registered alert token is not a VoIP token; an unknown one is sent as asked.
            let explicit = try await send(["tokens": [.string(token(1)), .string(token(7)), .string(token(99))]], pushType: "voip", marker: "voip-tokens")
            #expect(explicit.count("accepted") == 2 && explicit["rejected"]?["TokenKindMismatch"]?.intValue == 1, "\(explicit.jsonString)")
            #expect(Set(received("voip-tokens").keys) == [token(7), token(99)])
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(1))").json?["status"]?.stringValue == "active", "the alert token is left as it was")

            // Lists by kind.
            let voips = try await harness.call(.get, "/v1/apps/\(appID)/devices?kind=voip&limit=100")
            #expect(Set(voips.json?["devices"]?.arrayItems.compactMap { $0["token"]?.stringValue } ?? []) == Set((6..<10).map(token)))
        }
    }

    @Test("environments: each device is sent to its own environment's host, a device without one to the app's; listed and filtered by environment", arguments: Backend.allCases)
    func environments(backend: Backend) async throws {
        // A CA of its own name: trust stores find a CA by its name, and the first mock's has the default one.
        let sandboxAuthority = try MockCertificateAuthority(name: "Herald Mock APNs sandbox CA")
        let sandboxCA = try sandboxAuthority.tlsCertificate
        var sandboxConfiguration = MockAPNSServer.Configuration()
        sandboxConfiguration.sandbox = true
        sandboxConfiguration.tlsIdentity = try sandboxAuthority.issueServerIdentity()
        let sandbox = try MockAPNSServer(configuration: sandboxConfiguration)
        try await sandbox.start()
        defer { Task { try? await sandbox.shutdown() } }
        try await GatewayHarness.run(backend, gateway: { configuration in
            configuration.apps[0].environments[.sandbox] = sandbox.environment
            if case .only(let roots) = configuration.apps[0].trustRoots { configuration.apps[0].trustRoots = .only(roots + [sandboxCA]) }
        }) { harness in
            // 0..<3 sandbox (a debug build), 3..<6 production, 6..<8 registered without one.
            for number in 0..<8 {
                let fields: JSONValue = number < 3 ? ["environment": "sandbox"] : number < 6 ? ["environment": "production"] : [:]
                let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(number))", fields)
                #expect(answer.status == 201 && answer.json?["environment"]?.stringValue == (number < 3 ? "sandbox" : "production"), "\(answer.json?.jsonString ?? "")")
            }
            // A registration without one keeps it.
            #expect(try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(0))", ["badge": 1]).json?["environment"]?.stringValue == "sandbox")
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/devices?environment=sandbox")
            #expect(Set(listed.json?["devices"]?.arrayItems.compactMap { $0["token"]?.stringValue } ?? []) == Set((0..<3).map(token)))

            let all = try await harness.waitUntilDone(try await harness.send(["all": true], alert: "everyone"))
            #expect(all.count("accepted") == 8, "\(all.jsonString)")
            let explicit = try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1)), .string(token(4)), .string(token(99))]], alert: "explicit"))
            #expect(explicit.count("accepted") == 3)
            func received(_ mock: MockAPNSServer, _ alert: String) -> Set<String> {
                Set(mock.accepted.filter { (try? JSONValue(parsing: $0.payload))?["aps"]?["alert"]?.stringValue == alert }.map(\.token))
            }
            #expect(received(sandbox, "everyone") == Set((0..<3).map(token)))
            #expect(received(harness.mock, "everyone") == Set((3..<8).map(token)))
            #expect(received(sandbox, "explicit") == [token(1)])
            #expect(received(harness.mock, "explicit") == [token(4), token(99)], "an unknown token goes to the app's environment")
        }
        try await sandbox.shutdown()
    }

    @Test("tokens, users, tags and all: each device gets it once, the counts add up, deliveries are listed", arguments: Backend.allCases)
    func audiences(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await harness.register(0..<60, user: { "u\($0 % 5)" }, tags: { $0 % 2 == 0 ? ["even"] : [] })

            // Explicit tokens need not be registered.
            let tokens = try await harness.send(["tokens": [.string(token(1)), .string(token(2).uppercased()), .string(token(999))]], alert: "tokens")
            let users = try await harness.send(["users": ["u1"]], alert: "users")
            let tags = try await harness.send(["tags": ["even"]], alert: "tags")
            let all = try await harness.send(["all": true], alert: "all")

            let expected: [(String, String, Set<String>)] = [
                (tokens, "tokens", [token(1), token(2), token(999)]),
                (users, "users", Set((0..<60).filter { $0 % 5 == 1 }.map(token))),
                (tags, "tags", Set((0..<60).filter { $0 % 2 == 0 }.map(token))),
                (all, "all", Set((0..<60).map(token))),
            ]
            for (id, alert, devices) in expected {
                let done = try await harness.waitUntilDone(id)
                #expect(done["status"]?.stringValue == "done", "\(alert)")
                #expect(done.count("targeted") == devices.count && done.count("accepted") == devices.count, "\(alert): \(done.jsonString)")
                #expect(done.count("pending") == 0 && done.count("failed") == 0, "\(alert)")
                let received = harness.received(alert: alert)
                #expect(Set(received.keys) == devices, "\(alert): exactly its devices")
                #expect(received.values.allSatisfy { $0 == 1 }, "\(alert): each once")
            }
            for record in harness.mock.accepted {
                #expect(record.topic == bundleID && record.pushType == "alert")
            }

            // Accepted deliveries are listed for explicit tokens, a page at a time.
            var listed: [String] = []
            var cursor: String?
            for _ in 0..<5 {
                let page = try await harness.call(.get, "/v1/notifications/\(tokens)/deliveries?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
                #expect(page.status == 200)
                for delivery in page.json?["deliveries"]?.arrayItems ?? [] {
                    #expect(delivery["outcome"]?.stringValue == "accepted" && delivery["receipt"]?.stringValue != nil && delivery["apnsID"] == delivery["receipt"])
                    listed.append(delivery["token"]?.stringValue ?? "")
                }
                cursor = page.json?["next"]?.stringValue
                if cursor == nil { break }
            }
            #expect(listed == [token(1), token(2), token(999)])
        }
    }

    @Test("badge: increment raises each device's stored badge and sends it", arguments: Backend.allCases)
    func badgeIncrement(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", ["badge": 3, "user": "ann"])
            try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(2))", ["user": "ann"])
            for alert in ["first", "second"] {
                let id = try await harness.send(["users": ["ann"]], alert: alert, extra: ["badge": "increment"])
                try await harness.waitUntilDone(id)
            }
            var badges: [String: [Int]] = [:]
            for record in harness.mock.accepted {
                let payload = try JSONValue(parsing: record.payload)
                badges[record.token, default: []].append(payload["aps"]?["badge"]?.intValue ?? -1)
                #expect(payload["aps"]?["alert"]?.stringValue != nil, "the rest of the payload is kept")
            }
            #expect(badges[token(1)]?.sorted() == [4, 5])
            #expect(badges[token(2)]?.sorted() == [1, 2])
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(1))").json?.count("badge") == 5)
        }
    }

    @Test("pruning by Apple's rule: a 410 after the last registration unregisters; one before does not; BadDeviceToken invalidates", arguments: Backend.allCases)
    func pruning(backend: Backend) async throws {
        let now = Date()
        try await GatewayHarness.run(
            backend,
            mock: { mock in
                mock.script.unregister(token(1), since: now.addingTimeInterval(-3600))  // before the registration below
                mock.script.unregister(token(2), since: now.addingTimeInterval(3600))  // after it
                mock.script.fail(token(3), with: .reject(.badDeviceToken))
            }
        ) { harness in
            try await harness.register(0..<5)
            let first = try await harness.waitUntilDone(try await harness.send(["all": true], alert: "one"))
            #expect(first.count("accepted") == 2, "\(first.jsonString)")
            #expect(first["rejected"]?["Unregistered"]?.intValue == 2 && first["rejected"]?["BadDeviceToken"]?.intValue == 1)

            let device = { (number: Int) async throws -> JSONValue? in try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(number))").json }
            #expect(try await device(1)?["status"]?.stringValue == "active", "registered after APNs saw it go: kept")
            let gone = try await device(2)
            #expect(gone?["status"]?.stringValue == "unregistered" && gone?["reason"]?.stringValue == "Unregistered")
            #expect(gone?["invalidatedAt"]?.stringValue != nil)
            #expect(try await device(3)?["status"]?.stringValue == "invalid")

            let rejected = try await harness.call(.get, "/v1/notifications/\(first["id"]!.stringValue!)/deliveries?outcome=rejected")
            #expect(Set(rejected.json?["deliveries"]?.arrayItems.compactMap { $0["token"]?.stringValue } ?? []) == [token(1), token(2), token(3)])

            // The next broadcast leaves the pruned devices out.
            let second = try await harness.waitUntilDone(try await harness.send(["all": true], alert: "two"))
            #expect(second.count("targeted") == 3)
            #expect(Set(harness.received(alert: "two").keys) == [token(0), token(4)])

            // Registering again makes a device active again.
            try await harness.register([2])
            #expect(try await device(2)?["status"]?.stringValue == "active")
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/devices?status=invalid")
            #expect(listed.json?["devices"]?.arrayItems.compactMap { $0["token"]?.stringValue } == [token(3)])
        }
    }

    @Test("an idempotency key returns the first notification, and it is sent once", arguments: Backend.allCases)
    func idempotency(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            try await harness.register([1])
            let body: JSONValue = ["to": ["all": true], "payload": ["aps": ["alert": "once"]], "idempotencyKey": "order-42"]
            let first = try await harness.call(.post, "/v1/apps/\(appID)/notifications", body)
            let again = try await harness.call(.post, "/v1/apps/\(appID)/notifications", body)
            #expect(first.status == 202 && again.status == 202)
            #expect(first.json?["id"] == again.json?["id"])
            #expect(first.headers[HTTPField.Name("Idempotent-Replayed")!] == nil && again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            try await harness.waitUntilDone(try #require(first.json?["id"]?.stringValue))
            #expect(harness.received(alert: "once") == [token(1): 1])
        }
    }

    @Test("cancel: what is not sent is never sent, and counts as failed with reason Cancelled", arguments: Backend.allCases)
    func cancel(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let database = try await backend.storeURL(scratch: scratch)
        // An API-only gateway queues; nothing sends until a full one runs on the same database.
        try await GatewayHarness.run(backend) { harness in
            var configuration = harness.gateway.configuration
            configuration.database = try StoreURL(database)
            var cancelledID = ""
            try await withGateway(configuration, roles: .api) { _, port in
                try await harness.against(port: port) { api in
                    try await api.register(0..<10)
                    cancelledID = try await api.send(["all": true], alert: "cancelled")
                    let cancelled = try await api.call(.delete, "/v1/notifications/\(cancelledID)")
                    #expect(cancelled.status == 200)
                    #expect(cancelled.json?["status"]?.stringValue == "cancelled", "\(cancelled.json?.jsonString ?? "")")
                    _ = try await api.send(["all": true], alert: "kept")
                }
            }
            try await withGateway(configuration) { _, port in
                try await harness.against(port: port) { full in
                    let done = try await full.waitUntilDone(cancelledID)
                    #expect(done["status"]?.stringValue == "cancelled")
                    #expect(await eventually(every: .milliseconds(20)) { full.received(alert: "kept").count == 10 })
                    #expect(full.received(alert: "cancelled").isEmpty)
                    let after = try await full.call(.get, "/v1/notifications/\(cancelledID)")
                    #expect(after.json?.count("pending") == 0 && after.json?.count("failed") == 10, "\(after.json?.jsonString ?? "")")
                }
            }
        }
    }

    @Test("APNs unreachable: the notification stays pending and is retried until APNs is back; nothing lost", arguments: Backend.allCases)
    func apnsUnreachable(backend: Backend) async throws {
        let authority = try MockCertificateAuthority()
        let identity = try authority.issueServerIdentity()
        let port = try PostgresCluster.freePort()
        try await GatewayHarness.run(backend, mock: { $0.tlsIdentity = identity }) { harness in
            // The gateway under test points at a port where nothing listens yet.
            var configuration = harness.gateway.configuration
            configuration.apps[0].environment = .custom(host: "127.0.0.1", port: port)
            configuration.apps[0].trustRoots = .only([try authority.tlsCertificate])
            let scratch = try ScratchDirectory()
            configuration.database = try StoreURL(try await backend.storeURL(scratch: scratch))
            try await withGateway(configuration) { _, apiPort in
                try await harness.against(port: apiPort) { gateway in
                    try await gateway.register(0..<20)
                    let id = try await gateway.send(["all": true], alert: "later")
                    try await Task.sleep(for: .seconds(2))
                    let waiting = try await gateway.call(.get, "/v1/notifications/\(id)")
                    #expect(waiting.json?.count("pending") == 20 && waiting.json?.count("failed") == 0, "\(waiting.json?.jsonString ?? "")")

                    var mockConfiguration = harness.mock.configuration
                    mockConfiguration.port = port
                    let late = try MockAPNSServer(configuration: mockConfiguration)
                    try await late.start()
                    defer { Task { try? await late.shutdown() } }
                    // The host's circuit is open by now: its devices are held until a probe finds
                    // APNs back, and probes back off (1, 2, 4 … 60 s). On a loaded machine the first
                    // probes may fail too (a CI run saw the 60 s default run out): up to 3 minutes.
                    let done = try await gateway.waitUntilDone(id, timeout: .seconds(180))
                    #expect(done.count("accepted") == 20, "\(done.jsonString)")
                    #expect(Set(late.accepted.map(\.token)) == Set((0..<20).map(token)))
                    try await late.shutdown()
                }
            }
        }
    }
}

/// PostgreSQL going away under load, on a cluster of the test's own.
@Suite("Gateway and a PostgreSQL restart", .timeLimit(.minutes(6)))
struct DatabaseRestartTests {
    @Test("PostgreSQL down mid-broadcast: writes answer 503, readyz 503, workers pause; after it is back, nothing is lost")
    func restart() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let cluster = try await PostgresCluster.dedicated()
        defer { cluster.stop() }
        let database = try await cluster.createDatabase()
        try await GatewayHarness.run(.sqlite, gateway: { configuration in
            configuration.database = try StoreURL(database)
            configuration.queue.lease = .seconds(3)
        }) { harness in
            let lines = (0..<2000).map { #"{"token": "\#(token($0))"}"# }.joined(separator: "\n")
            let imported = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Array(lines.utf8), key: harness.key, contentType: "application/x-ndjson")
            #expect(imported.json?.count("upserted") == 2000)
            let before = try await harness.send(["all": true], alert: "before")

            cluster.halt()
            let refused = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "during"]]])
            #expect(refused.status == 503 && refused.json?["error"]?["code"]?.stringValue == "unavailable", "\(refused.json?.jsonString ?? "")")
            #expect(refused.headers[.retryAfter] != nil)
            #expect(try await harness.raw(.get, "/readyz", nil, key: nil).status == 503)
            #expect(try await harness.raw(.get, "/healthz", nil, key: nil).status == 200, "the process is still up")
            try await Task.sleep(for: .seconds(2))
            try await cluster.resume()

            var after: String?
            for _ in 0..<100 where after == nil {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "after"]]])
                if answer.status == 202 { after = answer.json?["id"]?.stringValue } else { try await Task.sleep(for: .milliseconds(200)) }
            }
            let afterID = try #require(after, "writes are accepted again once the database is back")
            for (id, alert) in [(before, "before"), (afterID, "after")] {
                let done = try await harness.waitUntilDone(id, timeout: .seconds(90))
                #expect(done.count("accepted") == 2000 && done.count("failed") == 0, "\(alert): \(done.jsonString)")
                let received = harness.received(alert: alert)
                #expect(received.count == 2000, "\(alert): every device, at least once")
            }
            #expect(try await harness.raw(.get, "/readyz", nil, key: nil).status == 200)
        }
    }
}

extension JSONValue {
    var arrayItems: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }
}
