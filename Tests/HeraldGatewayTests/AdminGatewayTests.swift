import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// Apps defined through the admin API, end to end: a gateway against the mock APNs defines an
/// app with an inline `.p8`, makes its key, and sends with it; a second gateway on the same
/// PostgreSQL puts each change in force within seconds, with no SIGHUP; a deletion leaves no row;
/// a rotated credentials key seals every definition again at start.
@Suite("Apps through the admin API", .timeLimit(.minutes(6)))
struct AdminGatewayTests {
    static let blogKey = ProviderKey.generate(keyID: "BLOG123456", teamID: "HERALDTEAM")

    /// `blog`: the mock's APNs with an inline provider key and the mock's CA.
    static func definition(_ mock: MockAPNSServer) -> JSONValue {
        [
            "apns": [
                "topic": "com.example.blog", "environment": .string(mock.url), "caPem": .string(mock.certificateAuthorityPEM ?? ""), "connections": 1,
                "authKey": ["pem": .string(blogKey.pemRepresentation), "keyID": "BLOG123456", "teamID": "HERALDTEAM"],
            ],
        ]
    }

    /// A fresh store's configuration with an admin key, a credentials key, a file key naming
    /// `blog` (which only the API defines), and the mock knowing `blog`'s provider key.
    static func prepare(
        _ backend: Backend, admin: APIKey, early: APIKey, keys: CredentialsKeys,
        _ body: (GatewayConfiguration, MockAPNSServer, String) async throws -> Void
    ) async throws {
        try await GatewayHarness.prepare(
            backend, mock: { $0.registerProviderKey(blogKey.publicKey, keyID: blogKey.keyID, teamID: blogKey.teamID) },
            gateway: { configuration in
                configuration.apiKeys += [admin, early]
                configuration.credentialsKeys = keys
            }, body)
    }

    /// Defines `blog` and makes its key; returns the key.
    static func defineBlog(_ harness: GatewayHarness, admin: String) async throws -> String {
        let created = try await harness.call(.put, "/v1/admin/apps/blog", definition(harness.mock), key: admin)
        #expect(created.status == 201, "\(created.json?.jsonString ?? "")")
        let made = try await harness.call(.post, "/v1/admin/apps/blog/keys", ["name": "backend"], key: admin)
        #expect(made.status == 201)
        return try #require(made.json?["key"]?.stringValue)
    }

    /// Queues a notification to `users` of `blog`; returns its ID.
    static func send(_ harness: GatewayHarness, key: String, to users: [String], extra: [String: JSONValue] = [:]) async throws -> String {
        var body: [String: JSONValue] = ["to": ["users": .array(users.map(JSONValue.string))], "payload": ["aps": ["alert": "Hello blog"]]]
        for (name, value) in extra { body[name] = value }
        let answer = try await harness.call(.post, "/v1/apps/blog/notifications", .object(body), key: key)
        #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
        return try #require(answer.json?["id"]?.stringValue)
    }

    @Test("an admin key defines an app with an inline .p8 for the mock, makes its key; a device registered with it gets the notification", arguments: Backend.allCases)
    func defineAndSend(backend: Backend) async throws {
        let admin = APIKey.generateAdmin(name: "ops")
        let early = APIKey.generate(name: "early", apps: ["blog"])
        try await Self.prepare(backend, admin: admin.entry, early: early.entry, keys: try CredentialsKeys(current: CredentialsKeys.randomKey())) { configuration, mock, key in
            try await GatewayHarness.run(configuration, mock: mock, key: key) { harness in
                // The file's key names blog before the API defines it: accepted, and refused there until then.
                #expect(try await harness.call(.put, "/v1/apps/blog/devices/\(token(1))", ["user": "u1"], key: early.key).status == 404)
                #expect(try await harness.call(.put, "/v1/admin/apps/blog", Self.definition(mock)).status == 403, "an app key on an admin route")
                let blog = try await Self.defineBlog(harness, admin: admin.key)
                #expect(try await harness.call(.put, "/v1/apps/blog/devices/\(token(7))", ["user": "u1"], key: blog).status == 201)
                #expect(try await harness.call(.put, "/v1/apps/blog/devices/\(token(8))", ["user": "u1"], key: early.key).status == 201)
                #expect(try await harness.call(.put, "/v1/apps/blog/devices/\(token(9))", ["user": "u1"]).status == 403, "shop's key may not use blog")
                let id = try await Self.send(harness, key: blog, to: ["u1"])
                let done = try await harness.waitUntilDone(id, key: blog)
                #expect(done.count("accepted") == 2, "\(done.jsonString)")
                let received = mock.accepted.filter { $0.topic == "com.example.blog" }
                #expect(Set(received.map(\.token)) == [token(7), token(8)] && received.allSatisfy { $0.keyID == "BLOG123456" })
            }
        }
    }

    @Test("two gateways on one PostgreSQL: a definition, a key and a deletion made on one are in force on the other within seconds; the deletion leaves no row")
    func twoProcesses() async throws {
        let admin = APIKey.generateAdmin(name: "ops")
        let early = APIKey.generate(name: "early", apps: ["blog"])
        try await Self.prepare(.postgres, admin: admin.entry, early: early.entry, keys: try CredentialsKeys(current: CredentialsKeys.randomKey())) { configuration, mock, key in
            try await GatewayHarness.run(configuration, mock: mock, key: key) { first in
                try await withGateway(configuration) { second, port in
                    try await first.against(port: port) { other in
                        let blog = try await Self.defineBlog(first, admin: admin.key)
                        // No SIGHUP: the second process polls the store's version.
                        let seen = try await eventually(within: .seconds(10), every: .milliseconds(50)) {
                            try await other.call(.put, "/v1/apps/blog/devices/\(token(1))", ["user": "u1", "tags": ["fans"]], key: blog).status == 201
                        }
                        #expect(seen, "the app and its key in force on the second gateway")
                        #expect(second.configuration.app("blog")?.source == .api)
                        for number in 2..<6 {
                            #expect(try await other.call(.put, "/v1/apps/blog/devices/\(token(number))", ["user": "u2"], key: blog).status == 201)
                        }
                        let sent = try await Self.send(other, key: blog, to: ["u1"])
                        try await other.waitUntilDone(sent, key: blog)
                        #expect(mock.accepted.contains { $0.token == token(1) && $0.topic == "com.example.blog" })
                        // A notification still queued when the app goes: cancelled, then deleted.
                        let later = Date().addingTimeInterval(3600).formatted(.iso8601)
                        _ = try await Self.send(other, key: blog, to: ["u2"], extra: ["sendAt": .string(later)])

                        let deleted = try await first.call(.delete, "/v1/admin/apps/blog", key: admin.key)
                        #expect(deleted.status == 200 && deleted.json?.count("cancelledNotifications") == 1 && deleted.json?.count("deletedDevices") == 5, "\(deleted.json?.jsonString ?? "")")
                        let gone = try await eventually(within: .seconds(10), every: .milliseconds(50)) {
                            try await other.call(.get, "/v1/apps", key: blog).status == 401 && second.configuration.app("blog") == nil
                        }
                        #expect(gone, "the deletion in force on the second gateway")
                        #expect(try await other.call(.get, "/v1/apps/blog/summary", key: early.key).status == 404)
                        // Every row of blog is gone (shop, the file's app, has none here).
                        guard case .postgres(let postgres) = configuration.database else { return }
                        let counts = try await tableRowCounts(url: "postgres://herald@127.0.0.1/\(postgres.database)")
                        let left = counts.filter { $0.value > 0 && !["herald_schema", "app_definitions_version"].contains($0.key) }
                        #expect(left.isEmpty, "rows left: \(left)")
                        #expect(counts["devices"] == 0 && counts["app_definitions"] == 0)
                    }
                }
            }
        }
    }

    @Test("a SIGHUP reload keeps the API's apps in force; an app the file comes to define wins over the API's, which is back once the file drops it")
    func reloadMerges() async throws {
        let admin = APIKey.generateAdmin(name: "ops")
        let early = APIKey.generate(name: "early", apps: ["blog"])
        try await Self.prepare(.sqlite, admin: admin.entry, early: early.entry, keys: try CredentialsKeys(current: CredentialsKeys.randomKey())) { configuration, mock, key in
            try await GatewayHarness.run(configuration, mock: mock, key: key) { harness in
                let blog = try await Self.defineBlog(harness, admin: admin.key)
                try await harness.gateway.reload(configuration)
                #expect(harness.gateway.configuration.app("blog")?.source == .api, "the file read again, the API's app stays")
                #expect(try await harness.call(.put, "/v1/apps/blog/devices/\(token(1))", [:], key: blog).status == 201)

                var withBlog = configuration
                var fileBlog = try #require(configuration.app(appID))
                fileBlog.id = "blog"
                fileBlog.topic = "com.example.fileblog"
                withBlog.apps.append(fileBlog)
                try await harness.gateway.reload(withBlog)
                #expect(harness.gateway.configuration.app("blog")?.topic == "com.example.fileblog" && harness.gateway.configuration.app("blog")?.source == .file)
                let listed = try await harness.call(.get, "/v1/admin/apps", key: admin.key).json?["apps"]
                let entries = (listed?.elements ?? []).filter { $0["id"]?.stringValue == "blog" }
                #expect(entries.map { $0["source"]?.stringValue ?? "" } == ["file", "api"] && entries.map { $0["inForce"] } == [.bool(true), .bool(false)])
                let refused = try await harness.call(.put, "/v1/admin/apps/blog", Self.definition(mock), key: admin.key)
                #expect(refused.status == 409 && refused.json?["error"]?["code"]?.stringValue == "definedInFile")
                #expect(try await harness.call(.get, "/v1/apps", key: blog).status == 200, "its key stays: it names the app, whoever defines it")

                try await harness.gateway.reload(configuration)
                #expect(harness.gateway.configuration.app("blog")?.topic == "com.example.blog" && harness.gateway.configuration.app("blog")?.source == .api)
            }
        }
    }

    @Test("a new credentials key: at start every definition sealed with the previous one is sealed again with it; without the previous key the app is not served and the API says why")
    func rotation() async throws {
        let admin = APIKey.generateAdmin(name: "ops")
        let early = APIKey.generate(name: "early", apps: ["blog"])
        let old = CredentialsKeys.randomKey()
        let new = CredentialsKeys.randomKey()
        let before = try CredentialsKeys(current: old)
        try await Self.prepare(.sqlite, admin: admin.entry, early: early.entry, keys: before) { configuration, mock, key in
            var blog = ""
            try await GatewayHarness.run(configuration, mock: mock, key: key) { harness in
                blog = try await Self.defineBlog(harness, admin: admin.key)
                #expect(try await harness.gateway.store.appCatalog().definitions.first?.sealedWith == before.current.fingerprint)
            }
            let blogKey = blog
            let rotatingKeys = try CredentialsKeys(current: new, previous: [old])
            var rotating = configuration
            rotating.credentialsKeys = rotatingKeys
            try await GatewayHarness.run(rotating, mock: mock, key: key) { harness in
                let sealedWith = try await harness.gateway.store.appCatalog().definitions.first?.sealedWith
                #expect(sealedWith == rotatingKeys.current.fingerprint)
                #expect(harness.gateway.configuration.app("blog")?.source == .api, "in force from the start")
                let registered = try await harness.call(.put, "/v1/apps/blog/devices/\(token(1))", [:], key: blogKey)
                #expect(registered.status == 201)
            }
            var rotated = configuration
            rotated.credentialsKeys = try CredentialsKeys(current: new)
            try await GatewayHarness.run(rotated, mock: mock, key: key) { harness in
                let read = try await harness.call(.get, "/v1/apps/blog/devices/\(token(1))", key: blogKey)
                #expect(read.status == 200)
            }
            var unrelated = configuration
            unrelated.credentialsKeys = try CredentialsKeys(current: CredentialsKeys.randomKey())
            try await GatewayHarness.run(unrelated, mock: mock, key: key) { harness in
                #expect(harness.gateway.configuration.app("blog") == nil, "not served without a key that opens it")
                let read = try await harness.call(.get, "/v1/admin/apps/blog", key: admin.key)
                #expect(read.status == 503 && read.json?["error"]?["message"]?.stringValue?.contains("does not have") == true, "\(read.json?.jsonString ?? "")")
                let listed = try await harness.call(.get, "/v1/admin/apps", key: admin.key).json?["apps"]?.elements?.first { $0["id"]?.stringValue == "blog" }
                #expect(listed?["inForce"] == .bool(false) && listed?["platforms"] == .array([]), "listed, unread: \(listed?.jsonString ?? "")")
            }
        }
    }
}
