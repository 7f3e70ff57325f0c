import Foundation
import HeraldCore
import _CryptoExtras
import HeraldFCM
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HeraldWebPush
import Testing

/// The configuration file: what it accepts, and for what it refuses, the file, the field and what
/// is wrong, never a secret.
@Suite("Gateway configuration")
struct ConfigurationTests {
    /// A directory with a `.p8` key and a CA file, and a valid configuration's JSON.
    private func fixture() throws -> (scratch: ScratchDirectory, json: (String) -> String) {
        let scratch = try ScratchDirectory()
        _ = try scratch.write("AuthKey_ABC123DEFG.p8", ProviderKey.generate().pemRepresentation)
        let key = APIKey.generate(name: "backend", apps: ["shop"]).entry
        let json = { (app: String) in
            """
            { "listen": "127.0.0.1:9090", "database": "sqlite:herald.db",
              "apps": [ \(app) ],
              "apiKeys": [ { "name": "backend", "sha256": "\(key.sha256Hex)", "apps": ["shop"] } ] }
            """
        }
        return (scratch, json)
    }

    private let app = #"{ "id": "shop", "topic": "com.example.shop", "environment": "sandbox", "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" } }"#

    @Test("the issue's example: listen, database, an app with a .p8 key (relative to the file), a key by its SHA-256")
    func valid() throws {
        let (scratch, json) = try fixture()
        let file = try scratch.write("herald.json", json(app))
        let configuration = try GatewayConfiguration.load(file: file)
        #expect(configuration.listen == ListenAddress(host: "127.0.0.1", port: 9090))
        #expect(configuration.database == .sqlite(path: "herald.db"))
        #expect(configuration.apps.map(\.id) == ["shop"] && configuration.apps[0].environment == .sandbox)
        #expect(configuration.apiKeys.first?.apps == ["shop"])
        #expect(configuration.workers.count == 4 && configuration.queue.lease == .seconds(60))
        // The gateway's queue defaults are the store's, one set of numbers.
        let store = configuration.storeConfiguration
        #expect(store.leaseDuration == HeraldStore.Configuration.Defaults.leaseDuration && store.maximumAge == HeraldStore.Configuration.Defaults.maximumAge)
        #expect(store.initialRetryDelay == HeraldStore.Configuration.Defaults.initialRetryDelay && configuration.workers.shutdownGrace == .seconds(20))

        let tuned = try scratch.write(
            "tuned.json",
            json(app.replacingOccurrences(of: #""environment": "sandbox""#, with: #""environment": "https://127.0.0.1:2197""#))
                .replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "[::1]:0", "queue": {"leaseSeconds": 5}, "workers": {"count": 2, "shutdownGraceSeconds": 3},"#)
        )
        let custom = try GatewayConfiguration.load(file: tuned)
        #expect(custom.apps[0].environment == .custom(host: "127.0.0.1", port: 2197))
        #expect(custom.listen == ListenAddress(host: "::1", port: 0) && custom.queue.lease == .seconds(5) && custom.workers.count == 2)
        #expect(custom.workers.shutdownGrace == .seconds(3))
    }

    @Test("workers.batchSize: the database's default (5,000 on SQLite, 10,000 on PostgreSQL) unless the file sets one")
    func batchSizeByDatabase() throws {
        let (scratch, json) = try fixture()
        let sqlite = try GatewayConfiguration.load(file: try scratch.write("herald.json", json(app)))
        #expect(sqlite.workers.batchSize == nil && sqlite.workers.batchSize(on: sqlite.database) == 5000)
        let postgres = try StoreURL("postgres://herald@127.0.0.1:5432/herald")
        #expect(sqlite.workers.batchSize(on: postgres) == 10_000)
        let set = try GatewayConfiguration.load(
            file: try scratch.write(
                "set.json", json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "workers": {"batchSize": 250},"#)
            )
        )
        #expect(set.workers.batchSize(on: set.database) == 250 && set.workers.batchSize(on: postgres) == 250)
    }

    @Test("each mistake is refused with the file, the field and what is wrong")
    func refused() throws {
        let (scratch, json) = try fixture()
        let cases: [(String, String, String)] = [
            ("{", "", "not valid JSON"),
            (json(app).replacingOccurrences(of: #""database": "sqlite:herald.db","#, with: ""), "database", "is required"),
            (json(app).replacingOccurrences(of: "sqlite:herald.db", with: "mysql://x"), "database", "sqlite"),
            (json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090""#, with: #""listen": "everywhere""#), "listen", "HOST:PORT"),
            (json(app).replacingOccurrences(of: #""listen""#, with: #""lisen""#), "lisen", "unknown field"),
            (json(""), "apps", "at least one app"),
            (json(app.replacingOccurrences(of: #""id": "shop""#, with: #""id": "Shop/1""#)), "apps[0].id", "a-z 0-9"),
            (json(app.replacingOccurrences(of: "sandbox", with: "staging")), "apps[0].environment", "sandbox, production or https://HOST:PORT"),
            (json(app.replacingOccurrences(of: #""environment": "sandbox""#, with: #""environment": "sandbox", "environments": {"sandbox": "http://x"}"#)), "apps[0].environments.sandbox", "https://HOST:PORT"),
            (json(app.replacingOccurrences(of: #""environment": "sandbox""#, with: #""environment": "sandbox", "environments": {"staging": "https://x"}"#)), "apps[0].environments.staging", "unknown field"),
            (json(app.replacingOccurrences(of: "AuthKey_ABC123DEFG.p8", with: "missing.p8")), "apps[0].authKey.file", "missing.p8"),
            (json(app.replacingOccurrences(of: #""keyID": "ABC123DEFG", "#, with: "")), "apps[0].authKey.keyID", "is required"),
            (json(app.replacingOccurrences(of: #", "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" }"#, with: "")), "apps[0]", "authKey"),
            (json(app.replacingOccurrences(of: #""authKey""#, with: #""credentialsByKind": {"voip": "certificate"}, "authKey""#)), "apps[0].credentialsByKind.voip", "names certificate"),
            (json(app.replacingOccurrences(of: #""authKey""#, with: #""credentialsByKind": {"fax": "authKey"}, "authKey""#)), "apps[0].credentialsByKind.fax", "unknown field"),
            (json(app.replacingOccurrences(of: #""authKey""#, with: #""credentialsByKind": {"voip": {"authKey": {"file": "missing.p8", "keyID": "K", "teamID": "T"}}}, "authKey""#)), "apps[0].credentialsByKind.voip.authKey.file", "missing.p8"),
            (json(app.replacingOccurrences(of: #""authKey""#, with: #""credentialsByKind": {"voip": {}}, "authKey""#)), "apps[0].credentialsByKind.voip", "give one of"),
            (json(app.replacingOccurrences(of: #""authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" }"#, with: #""certificate": {"file": "push.p12", "passwordEnv": "HERALD_TEST_UNSET_PASSWORD"}"#)), "apps[0].certificate.passwordEnv", "HERALD_TEST_UNSET_PASSWORD is not set"),
            (json("\(app), \(app)"), "apps[1].id", "given twice"),
            (json(app).replacingOccurrences(of: #""apps": ["shop"] }"#, with: #""apps": ["shop", "Blog/1"] }"#), "apiKeys[0].apps[1]", "is not an app ID"),
            (json(app).replacingOccurrences(of: #""sha256": ""#, with: #""sha256": "zz"#), "apiKeys[0].sha256", "64 hex digits"),
            (json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "workers": {"count": 0},"#), "workers.count", "1 to 64"),
            (json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "queue": {"leaseSeconds": "long"},"#), "queue.leaseSeconds", "must be an integer"),
            (json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "workers": {"shutdownGraceSeconds": 0},"#), "workers.shutdownGraceSeconds", "1 to 300"),
        ]
        for (index, (text, field, words)) in cases.enumerated() {
            let file = try scratch.write("case\(index).json", text)
            let error = #expect(throws: ConfigurationError.self, "\(field)") { try GatewayConfiguration.load(file: file) }
            #expect(error?.file == file, "\(field)")
            #expect(error?.field == field, "\(error?.description ?? "")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
        }
        let missing = #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(file: scratch.file("nope.json")) }
        #expect(missing?.description.contains("nope.json") == true)
    }

    /// ``app`` with its APNs settings in `apns`, beside `webPush` and `fcm`.
    private let nested = #"{ "id": "shop", "apns": { "topic": "com.example.shop", "environment": "sandbox", "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" } } }"#

    @Test("apps[].apns holds an app's APNs settings beside webPush and fcm; the flat form before it is read the same, with a notice")
    func apnsNested() throws {
        let (scratch, json) = try fixture()
        let new = try GatewayConfiguration.load(file: try scratch.write("nested.json", json(nested)))
        let old = try GatewayConfiguration.load(file: try scratch.write("flat.json", json(app)))
        for configuration in [new, old] {
            let shop = configuration.apps[0]
            #expect(shop.topic == "com.example.shop" && shop.environment == .sandbox && shop.platforms == [.apns])
            #expect(shop.credentialDescription == "provider key ABC123DEFG of team DEF123GHIJ")
        }
        #expect(new.formNotice == nil)
        #expect(old.formNotice?.contains("app shop gives its APNs settings at the app's top level") == true, "\(old.formNotice ?? "")")
        #expect(old.formNotice?.contains("apps[].apns") == true)
        let tuned = try GatewayConfiguration.load(
            file: try scratch.write(
                "tuned.json",
                json(nested.replacingOccurrences(of: #""environment": "sandbox""#, with: #""environment": "sandbox", "connections": 2, "environments": {"production": "https://127.0.0.1:2197"}"#))))
        #expect(tuned.apps[0].connections == 2 && tuned.apps[0].host(for: .production) == .custom(host: "127.0.0.1", port: 2197))

        let cases: [(String, String, String)] = [
            (nested.replacingOccurrences(of: #""id": "shop","#, with: #""id": "shop", "topic": "com.example.shop","#), "apps[0].topic", "not both"),
            (nested.replacingOccurrences(of: #""environment": "sandbox""#, with: #""environment": "sandbox", "colour": 1"#), "apps[0].apns.colour", "unknown field"),
            (nested.replacingOccurrences(of: #""topic": "com.example.shop", "#, with: ""), "apps[0].apns.topic", "is required"),
            (nested.replacingOccurrences(of: "sandbox", with: "staging"), "apps[0].apns.environment", "sandbox, production"),
            (nested.replacingOccurrences(of: "AuthKey_ABC123DEFG.p8", with: "missing.p8"), "apps[0].apns.authKey.file", "missing.p8"),
            (nested.replacingOccurrences(of: #", "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" }"#, with: ""), "apps[0].apns", "authKey"),
            (#"{ "id": "shop" }"#, "apps[0]", "give apns"),
        ]
        for (index, (text, field, words)) in cases.enumerated() {
            let file = try scratch.write("nested\(index).json", json(text))
            let error = #expect(throws: ConfigurationError.self, "\(field)") { try GatewayConfiguration.load(file: file) }
            #expect(error?.field == field, "\(error?.description ?? "")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
        }
    }

    @Test("webPush: a VAPID key file, a contact and a default URL; each mistake named by its field")
    func webPush() throws {
        let (scratch, json) = try fixture()
        let key = VAPIDKey.generate()
        _ = try scratch.write("vapid.pem", key.pemRepresentation)
        let base = self.app
        func app(_ webPush: String) -> String { String(base.dropLast()) + #", "webPush": "# + webPush + "}" }
        let good = #"{"vapidKeyFile": "vapid.pem", "subject": "mailto:ops@example.com", "defaultURL": "https://shop.example.com/"}"#
        let loaded = try GatewayConfiguration.load(file: try scratch.write("webpush.json", json(app(good)))).apps[0].webPush
        #expect(loaded?.key.publicKeyBase64URL == key.publicKeyBase64URL && loaded?.subject == "mailto:ops@example.com")
        #expect(loaded?.defaultURL == "https://shop.example.com/" && loaded?.allowsLoopbackHTTP == false)
        #expect(loaded?.allowsPrivateAddresses == false && loaded?.allowedHosts == [] && loaded?.policy == .standard)
        let opened = good.replacingOccurrences(of: "}", with: #", "allowedHosts": ["ntfy.example.net", ".up.example.org"], "allowPrivateAddresses": true}"#)
        let policy = try GatewayConfiguration.load(file: try scratch.write("opened.json", json(app(opened)))).apps[0].webPush?.policy
        #expect(policy == WebPushSubscription.Policy(allowedHosts: ["ntfy.example.net", ".up.example.org"], allowsPrivateAddresses: true))
        let cases: [(String, String, String)] = [
            (good.replacingOccurrences(of: "}", with: #", "allowedHosts": ["https://ntfy.example.net/"]}"#), "apps[0].webPush.allowedHosts", "not a host name"),
            (good.replacingOccurrences(of: "vapid.pem", with: "absent.pem"), "apps[0].webPush.vapidKeyFile", "webpush keygen"),
            (good.replacingOccurrences(of: "mailto:ops@example.com", with: "ops@example.com"), "apps[0].webPush.subject", "mailto:"),
            (good.replacingOccurrences(of: "https://shop", with: "http://shop"), "apps[0].webPush.defaultURL", "https://"),
            (#"{"vapidKeyFile": "vapid.pem", "subject": "mailto:a@b.c"}"#, "apps[0].webPush.defaultURL", "required"),
            (good.replacingOccurrences(of: "}", with: #", "color": 1}"#), "apps[0].webPush.color", "unknown field"),
        ]
        for (index, (webPush, field, words)) in cases.enumerated() {
            let file = try scratch.write("webpush\(index).json", json(app(webPush)))
            let error = #expect(throws: ConfigurationError.self, "\(field)") { try GatewayConfiguration.load(file: file) }
            #expect(error?.field == field, "\(error?.description ?? "")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
            #expect(error?.description.contains("PRIVATE KEY") == false, "never the key")
        }

        // An app that reaches browsers only: webPush without APNs credentials needs no topic or
        // environment. Without either, the error says what to give.
        let browsersOnly = try GatewayConfiguration.load(file: try scratch.write("site.json", json(#"{"id": "shop", "webPush": \#(good)}"#))).apps[0]
        #expect(browsersOnly.credentials == nil && browsersOnly.apnsTopic == nil && browsersOnly.webPush != nil && browsersOnly.defaultEnvironment == .production)
        let nothing = try scratch.write("nothing.json", json(#"{"id": "shop", "topic": "com.example.shop", "environment": "sandbox"}"#))
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(file: nothing) }
        #expect(error?.field == "apps[0]" && error?.message.contains("webPush") == true && error?.message.contains("authKey") == true, "\(error?.description ?? "")")
    }

    @Test("fcm: a service-account key file, an endpoint and a CA; each mistake named by its field, never the key")
    func fcm() throws {
        let (scratch, json) = try fixture()
        let account = try FCMServiceAccount(
            projectID: "shop-android", privateKeyID: "key1", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048), clientEmail: "push@shop-android.iam.gserviceaccount.com")
        _ = try scratch.write("sa.json", String(decoding: account.jsonRepresentation, as: UTF8.self))
        var broken = try JSONValue(parsing: account.jsonRepresentation).objectValue!
        broken["private_key"] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
        _ = try scratch.write("broken.json", JSONValue.object(broken).jsonString)
        let base = self.app
        func app(_ fcm: String) -> String { String(base.dropLast()) + #", "fcm": "# + fcm + "}" }
        let loaded = try GatewayConfiguration.load(file: try scratch.write("fcm.json", json(app(#"{"serviceAccountFile": "sa.json"}"#)))).apps[0]
        #expect(loaded.fcm?.serviceAccount.projectID == "shop-android" && loaded.fcm?.endpoint == "https://fcm.googleapis.com" && loaded.platforms == [.apns, .fcm])
        // An app of browsers and Android devices only needs no topic or environment.
        let androidOnly = try GatewayConfiguration.load(file: try scratch.write("android.json", json(#"{"id": "shop", "fcm": {"serviceAccountFile": "sa.json"}}"#))).apps[0]
        #expect(androidOnly.platforms == [.fcm] && androidOnly.apnsTopic == nil)
        let cases: [(String, String, String)] = [
            (#"{"serviceAccountFile": "absent.json"}"#, "apps[0].fcm.serviceAccountFile", "service account"),
            (#"{"serviceAccountFile": "broken.json"}"#, "apps[0].fcm.serviceAccountFile", "private_key"),
            (#"{"serviceAccountFile": "sa.json", "endpoint": "http://127.0.0.1:8444"}"#, "apps[0].fcm.endpoint", "https://"),
            (#"{"serviceAccountFile": "sa.json", "connections": 0}"#, "apps[0].fcm.connections", "1 to 64"),
            (#"{"serviceAccountFile": "sa.json", "project": "x"}"#, "apps[0].fcm.project", "unknown field"),
            (#"{}"#, "apps[0].fcm.serviceAccountFile", "required"),
        ]
        for (index, (fcm, field, words)) in cases.enumerated() {
            let file = try scratch.write("fcm\(index).json", json(app(fcm)))
            let error = #expect(throws: ConfigurationError.self, "\(field)") { try GatewayConfiguration.load(file: file) }
            #expect(error?.field == field, "\(error?.description ?? "")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
            // The hint names the PEM header; the key's own text never appears.
            #expect(error?.description.contains("not a key") == false, "never the key")
        }
    }

    @Test("scheduling: a default time zone, quiet hours, a rate ceiling and the schedule horizon; each mistake named by its field")
    func scheduling() throws {
        let (scratch, json) = try fixture()
        func with(_ fields: String) -> String { app.replacingOccurrences(of: #""id": "shop","#, with: #""id": "shop", \#(fields),"#) }
        let good = with(#""defaultTimeZone": "Europe/Paris", "quietHours": {"start": "22:00", "end": "08:00"}, "maximumRatePerSecond": 250"#)
        let tuned = json(good).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "limits": {"maximumScheduleAheadSeconds": 86400},"#)
        let loaded = try GatewayConfiguration.load(file: try scratch.write("scheduling.json", tuned))
        #expect(loaded.apps[0].defaultTimeZone == "Europe/Paris")
        #expect(loaded.apps[0].quietHours == QuietHours(start: TimeOfDay("22:00")!, end: TimeOfDay("08:00")!))
        #expect(loaded.apps[0].maximumRatePerSecond == 250)
        #expect(loaded.limits.maximumScheduleAhead == .seconds(86400))
        let plain = try GatewayConfiguration.load(file: try scratch.write("plain.json", json(app)))
        #expect(plain.apps[0].defaultTimeZone == "UTC" && plain.apps[0].quietHours == nil && plain.apps[0].maximumRatePerSecond == nil)
        #expect(plain.limits.maximumScheduleAhead == .seconds(30 * 24 * 3600))

        let cases: [(String, String, String)] = [
            (json(with(#""defaultTimeZone": "Mars/Olympus""#)), "apps[0].defaultTimeZone", "IANA"),
            (json(with(#""defaultTimeZone": "CET""#)), "apps[0].defaultTimeZone", "IANA"),
            (json(with(#""quietHours": {"start": "24:00", "end": "08:00"}"#)), "apps[0].quietHours.start", "HH:MM"),
            (json(with(#""quietHours": {"start": "22:00"}"#)), "apps[0].quietHours.end", "is required"),
            (json(with(#""quietHours": {"start": "22:00", "end": "22:00"}"#)), "apps[0].quietHours.end", "must differ"),
            (json(with(#""quietHours": {"start": "22:00", "end": "08:00", "days": 5}"#)), "apps[0].quietHours.days", "unknown field"),
            (json(with(#""maximumRatePerSecond": -1"#)), "apps[0].maximumRatePerSecond", "more than 0"),
            (json(with(#""maximumRatePerSecond": "fast""#)), "apps[0].maximumRatePerSecond", "number"),
            (json(app).replacingOccurrences(of: #""listen": "127.0.0.1:9090","#, with: #""listen": "127.0.0.1:9090", "limits": {"maximumScheduleAheadSeconds": 5},"#), "limits.maximumScheduleAheadSeconds", "60 to"),
        ]
        for (index, (text, field, words)) in cases.enumerated() {
            let file = try scratch.write("scheduling\(index).json", text)
            let error = #expect(throws: ConfigurationError.self, "\(field)") { try GatewayConfiguration.load(file: file) }
            #expect(error?.field == field, "\(error?.description ?? "")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
        }
    }

    @Test("credentials by kind: a kind's own credential serves it, the app's serves the rest")
    func credentialsByKind() throws {
        let (scratch, json) = try fixture()
        let voip = app.replacingOccurrences(
            of: #""authKey""#, with: #""credentialsByKind": {"voip": {"authKey": {"file": "AuthKey_ABC123DEFG.p8", "keyID": "VOIP123456", "teamID": "DEF123GHIJ"}}, "alert": "authKey"}, "authKey""#
        )
        let loaded = try GatewayConfiguration.load(file: try scratch.write("voip.json", json(voip))).apps[0]
        func keyID(_ kind: TokenKind) -> String? {
            guard case .providerToken(let key) = loaded.credentials(for: kind) else { return nil }
            return key.keyID
        }
        #expect(keyID(.voip) == "VOIP123456" && keyID(.alert) == "ABC123DEFG" && keyID(.liveactivity) == "ABC123DEFG")
        #expect(Set(loaded.credentialsByKind.keys) == [.voip, .alert])
    }

    @Test("environments: the app's environment is where devices without one go; each token environment goes to Apple's host for it unless environments names another")
    func environments() throws {
        let (scratch, json) = try fixture()
        let sandbox = try GatewayConfiguration.load(file: try scratch.write("sandbox.json", json(app))).apps[0]
        #expect(sandbox.defaultEnvironment == .sandbox && sandbox.host(for: .sandbox) == .sandbox && sandbox.host(for: .production) == .production)
        let mocked = app.replacingOccurrences(
            of: #""environment": "sandbox""#, with: #""environment": "https://127.0.0.1:2197", "environments": {"sandbox": "https://127.0.0.1:2198"}"#
        )
        let custom = try GatewayConfiguration.load(file: try scratch.write("mocked.json", json(mocked))).apps[0]
        #expect(custom.defaultEnvironment == .production, "a host of its own counts as production")
        #expect(custom.host(for: .production) == .custom(host: "127.0.0.1", port: 2197))
        #expect(custom.host(for: .sandbox) == .custom(host: "127.0.0.1", port: 2198))
    }

    @Test("secrets stay out: a PostgreSQL password comes from PGPASSWORD, and is never shown")
    func secrets() throws {
        let (scratch, json) = try fixture()
        let file = try scratch.write("pg.json", json(app).replacingOccurrences(of: "sqlite:herald.db", with: "postgres://herald@db.internal:5432/push"))
        let configuration = try GatewayConfiguration.load(file: file, environment: ["PGPASSWORD": "s3cret-pw"])
        guard case .postgres(let postgres) = configuration.database else {
            Issue.record("not PostgreSQL: \(configuration.database)")
            return
        }
        #expect(postgres.password == "s3cret-pw")
        #expect(!configuration.database.description.contains("s3cret-pw"))
        let generated = APIKey.generate(name: "ops", apps: ["shop"])
        #expect(generated.key.hasPrefix("hk_") && generated.key.count == 46)
        #expect(!generated.entry.configurationEntry.jsonString.contains(generated.key), "the entry holds only the digest")
        #expect(generated.entry.sha256 == APIKey.digest(of: generated.key))
    }
}
