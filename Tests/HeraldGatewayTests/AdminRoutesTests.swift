import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldTestSupport
import Hummingbird
import Testing
import Crypto

/// The admin routes' contract in router mode: who may call them, what each answers (checked
/// against the OpenAPI document by ``RouterHarness``), and each bad input named by its field.
@Suite("Admin routes", .timeLimit(.minutes(4)))
struct AdminRoutesTests {
    static let admin = APIKey.generateAdmin(name: "ops")
    static let providerKey = ProviderKey.generate(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")

    /// The router with an admin key, and a credentials key unless `sealing` is false.
    static func run(sealing: Bool = true, _ body: @escaping @Sendable (RouterHarness) async throws -> Void) async throws {
        let keys = try CredentialsKeys(current: CredentialsKeys.randomKey())
        try await RouterHarness.run(configure: { configuration in
            configuration.apiKeys.append(admin.entry)
            if sealing { configuration.credentialsKeys = keys }
        }, body)
    }

    /// A definition reaching APNs with an inline `.p8`.
    static func definition(topic: String = "com.example.blog", authKeyPEM: String = providerKey.pemRepresentation) -> String {
        #"{"apns": {"topic": "\#(topic)", "environment": "sandbox", "authKey": {"pem": \#(JSONValue.string(authKeyPEM).jsonString), "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}}}"#
    }

    @Test("an app key on an admin route is 403 saying an admin key is needed; an admin key uses no app's routes")
    func adminScope() async throws {
        try await Self.run { api in
            for (method, path) in [(HTTPRequest.Method.get, "/v1/admin/apps"), (.put, "/v1/admin/apps/blog"), (.delete, "/v1/admin/apps/blog"), (.post, "/v1/admin/apps/shop/keys")] {
                let answer = try await api.call(method, path, body: method == .get || method == .delete ? nil : Self.definition())
                #expect(answer.status == 403, "\(method) \(path)")
                #expect(answer.json?["error"]?["message"]?.stringValue?.contains("admin key") == true, "\(answer.json?.jsonString ?? "")")
            }
            #expect(try await api.call(.get, "/v1/admin/apps", key: .some(nil)).status == 401)
            #expect(try await api.call(.get, "/v1/apps/\(appID)/summary", key: Self.admin.key).status == 403)
            #expect(try await api.call(.get, "/v1/apps", key: Self.admin.key).json?["apps"] == .array([]))
        }
    }

    @Test("without a credentials key, defining or listing answers 409 saying how to set one, and nothing is stored")
    func noCredentialsKey() async throws {
        try await Self.run(sealing: false) { api in
            let put = try await api.call(.put, "/v1/admin/apps/blog", body: Self.definition(), key: Self.admin.key)
            #expect(put.status == 409 && put.json?["error"]?["code"]?.stringValue == "credentialsKeyNotSet")
            #expect(put.json?["error"]?["message"]?.stringValue?.contains("HERALD_CREDENTIALS_KEY") == true)
            #expect(try await api.call(.get, "/v1/admin/apps", key: Self.admin.key).status == 409)
            #expect(try await api.call(.get, "/v1/admin/apps/blog", key: Self.admin.key).status == 409)
            #expect(try await api.call(.delete, "/v1/admin/apps/blog", key: Self.admin.key).status == 404, "nothing was stored")
        }
    }

    @Test("defined (201), replaced (200), read and listed with credentials described and no secret; a key made, used and deleted; the app deleted")
    func lifecycle() async throws {
        try await Self.run { api in
            let created = try await api.call(.put, "/v1/admin/apps/blog", body: Self.definition(), key: Self.admin.key)
            #expect(created.status == 201, "\(created.json?.jsonString ?? "")")
            #expect(created.json?["source"]?.stringValue == "api" && created.json?["inForce"] == .bool(true))
            #expect(created.json?["credentials"]?["apns"]?.stringValue == "provider key ABC123DEFG of team DEF123GHIJ")
            let replaced = try await api.call(.put, "/v1/admin/apps/blog", body: Self.definition(topic: "com.example.blog2"), key: Self.admin.key)
            #expect(replaced.status == 200 && replaced.json?["topic"]?.stringValue == "com.example.blog2")

            let list = try await api.call(.get, "/v1/admin/apps", key: Self.admin.key)
            let apps = list.json?["apps"]?.elements ?? []
            #expect(apps.compactMap { $0["id"]?.stringValue } == ["blog", "other", appID])
            #expect(apps.compactMap { $0["source"]?.stringValue } == ["api", "file", "file"])
            #expect(!(list.json?.jsonString ?? "").contains("PRIVATE KEY") && !(list.json?.jsonString ?? "").contains("MIG"))
            #expect(try await api.call(.get, "/v1/admin/apps/blog", key: Self.admin.key).json?["updatedAt"]?.stringValue != nil)
            #expect(try await api.call(.get, "/v1/admin/apps/\(appID)", key: Self.admin.key).json?["source"]?.stringValue == "file")
            #expect(try await api.call(.get, "/v1/admin/apps/nope", key: Self.admin.key).status == 404)

            let made = try await api.call(.post, "/v1/admin/apps/blog/keys", body: #"{"name": "backend"}"#, key: Self.admin.key)
            #expect(made.status == 201 && made.headers[.cacheControl] == "no-store")
            let key = try #require(made.json?["key"]?.stringValue)
            #expect(made.json?["sha256"]?.stringValue == APIKey.digest(of: key).map { String(format: "%02x", $0) }.joined())
            #expect(try await api.call(.get, "/v1/apps", key: key).json?["apps"]?.elements?.first?["id"]?.stringValue == "blog")
            #expect(try await api.call(.get, "/v1/admin/apps", key: key).status == 403, "an app key made here is an app key")
            #expect(try await api.call(.post, "/v1/admin/apps/blog/keys", body: #"{"name": "backend"}"#, key: Self.admin.key).status == 409)
            #expect(try await api.call(.get, "/v1/admin/apps/blog", key: Self.admin.key).json?["keys"]?.elements?.first?["name"]?.stringValue == "backend")
            #expect(try await api.call(.delete, "/v1/admin/apps/blog/keys/backend", key: Self.admin.key).status == 200)
            #expect(try await api.call(.get, "/v1/apps", key: key).status == 401)
            #expect(try await api.call(.delete, "/v1/admin/apps/blog/keys/backend", key: Self.admin.key).status == 404)

            let deleted = try await api.call(.delete, "/v1/admin/apps/blog", key: Self.admin.key)
            #expect(deleted.status == 200 && deleted.json?["id"]?.stringValue == "blog")
            #expect(try await api.call(.get, "/v1/admin/apps/blog", key: Self.admin.key).status == 404)
            #expect(try await api.call(.delete, "/v1/admin/apps/blog", key: Self.admin.key).status == 404)
        }
    }

    @Test("bad input: an invalid ID, an ID the file defines, a key that does not parse, a path on the server, an expired certificate, a VAPID key on another curve: each a 4xx naming what")
    func refusals() async throws {
        let authority = try MockCertificateAuthority(name: "Admin Test CA")
        let expired = try authority.issuePushCertificate(topic: "com.example.blog", validFor: -60)
        let certificatePEM = try expired.certificate.serializeAsPEM().pemString + (try expired.privateKey.serializeAsPEM().pemString)
        let garbage = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        try await Self.run { api in
            let cases: [(String, String, Int, String, String)] = [
                ("Blog", Self.definition(), 400, "invalidRequest", "app:"),
                (appID, Self.definition(), 409, "definedInFile", "configuration file"),
                ("blog", Self.definition(authKeyPEM: garbage), 400, "invalidRequest", "apns.authKey.pem"),
                ("blog", #"{"apns": {"topic": "t", "environment": "sandbox", "authKey": {"file": "/etc/passwd", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}}}"#, 400, "invalidRequest", "apns.authKey.file"),
                ("blog", #"{"apns": {"topic": "t", "environment": "sandbox", "certificate": {"pem": \#(JSONValue.string(certificatePEM).jsonString)}}}"#, 400, "invalidRequest", "apns.certificate: certificate 'com.example.blog' expired"),
                ("blog", #"{"webPush": {"vapidKeyPem": \#(JSONValue.string(p384).jsonString), "subject": "mailto:a@b.c", "defaultURL": "https://b.example/"}}"#, 400, "invalidRequest", "webPush.vapidKeyPem"),
                ("blog", #"{"fcm": {"serviceAccountFile": "sa.json"}}"#, 400, "invalidRequest", "fcm.serviceAccountFile"),
                ("blog", #"{"colour": "blue"}"#, 400, "invalidRequest", "colour: unknown field"),
                ("blog", #"["not an object"]"#, 400, "invalidRequest", "JSON object"),
            ]
            for (id, body, status, code, words) in cases {
                let answer = try await api.call(.put, "/v1/admin/apps/\(id)", body: body, key: Self.admin.key)
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == status && answer.json?["error"]?["code"]?.stringValue == code, "\(id): \(answer.status) \(message)")
                #expect(message.contains(words), "\(message): should say '\(words)'")
                let p384Body = p384.split(separator: "\n").dropFirst().first.map(String.init) ?? "unused"
                #expect(!message.contains("bm90IGEga2V5") && !message.contains(p384Body), "never a secret: \(message)")
            }
            #expect(try await api.call(.get, "/v1/admin/apps", key: Self.admin.key).json?["apps"]?.elements?.count == 2, "nothing was defined")
            #expect(try await api.call(.post, "/v1/admin/apps/nope/keys", body: #"{"name": "x"}"#, key: Self.admin.key).status == 404)
            #expect(try await api.call(.post, "/v1/admin/apps/\(appID)/keys", body: #"{"name": ""}"#, key: Self.admin.key).status == 400)
            #expect(try await api.call(.delete, "/v1/admin/apps/\(appID)", key: Self.admin.key).status == 409, "the file's app is not deleted here")
        }
    }
}

extension JSONValue {
    /// The elements of an array, for short expectations.
    var elements: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
