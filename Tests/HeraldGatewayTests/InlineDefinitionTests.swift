import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldFCM
import HeraldHMS
import HeraldStore
import HeraldTestSupport
import HeraldWebPush
import Testing
import _CryptoExtras
import Crypto

@testable import HeraldGateway

/// An app's definition as the admin API takes it: the configuration file's `apps[]` entry with
/// its secrets inline, read by the file's parser; paths and environment variables refused there,
/// inline secrets refused in the file; every refusal names its field and never holds a secret.
@Suite("Inline app definitions")
struct InlineDefinitionTests {
    static let providerKey = ProviderKey.generate(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")

    static func parse(_ json: String, id: String = "blog") throws(FieldError) -> GatewayConfiguration.App {
        try GatewayConfiguration.App(id: id, definition: Array(json.utf8))
    }

    static func trustsOnlyTheSystem(_ app: GatewayConfiguration.App) -> Bool {
        if case .system = app.trustRoots { return true }
        return false
    }

    /// The refusal of `json`, which must be one.
    static func refusal(_ json: String, id: String = "blog", sourceLocation: SourceLocation = #_sourceLocation) -> FieldError? {
        #expect(throws: FieldError.self, sourceLocation: sourceLocation) { try parse(json, id: id) }
    }

    static var authKey: String {
        #"{"pem": \#(JSONValue.string(providerKey.pemRepresentation).jsonString), "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}"#
    }

    @Test("every secret inline: a .p8, a .p12 in base64 with its password, a PEM certificate, a CA, a VAPID key, FCM's and Huawei's service accounts, a webhook's secret")
    func inlineForms() async throws {
        let scratch = try ScratchDirectory()
        let authority = try MockCertificateAuthority(name: "Inline Test CA")
        let push = try authority.issuePushCertificate(topic: "com.example.blog")
        let certificatePEM = try push.certificate.serializeAsPEM().pemString
        let keyPEM = try push.privateKey.serializeAsPEM().pemString
        let p12 = try Data(contentsOf: URL(fileURLWithPath: try await scratch.p12(certificatePEM: certificatePEM, keyPEM: keyPEM, legacy: false, password: "pw", name: "push")))
        let vapid = VAPIDKey.generate()
        let fcm = try FCMServiceAccount(
            projectID: "blog-android", privateKeyID: "key1", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048), clientEmail: "push@blog-android.iam.gserviceaccount.com")
        let hms = try HMSServiceAccount(projectID: "101653523863785276", keyID: "key-1", subAccount: "sub-1", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let caPEM = try authority.certificate.serializeAsPEM().pemString
        // The .p12 in base64 as `base64` prints it, in lines of 76, or on one line.
        let wrapped = p12.base64EncodedString(options: .lineLength76Characters).replacingOccurrences(of: "\r\n", with: "\\n")
        func definition(p12 base64: String) -> String {
            """
            { "apns": { "topic": "com.example.blog", "environment": "sandbox", "authKey": \(Self.authKey),
                        "certificate": {"p12Base64": "\(base64)", "password": "pw"},
                        "credentialsByKind": {"voip": {"certificate": {"pem": \(JSONValue.string(certificatePEM).jsonString), "keyPem": \(JSONValue.string(keyPEM).jsonString)}}},
                        "caPem": \(JSONValue.string(caPEM).jsonString) },
              "webPush": { "vapidKeyPem": \(JSONValue.string(vapid.pemRepresentation).jsonString), "subject": "mailto:ops@example.com", "defaultURL": "https://blog.example.com/" },
              "fcm": { "serviceAccount": \(String(decoding: fcm.jsonRepresentation, as: UTF8.self)) },
              "hms": { "clientID": "104567891", "clientSecret": "s3cr3t-value", "serviceAccount": \(String(decoding: hms.jsonRepresentation, as: UTF8.self)) },
              "webhooks": [ { "url": "https://hooks.example.com/herald", "secret": "hook-secret" } ] }
            """
        }
        let app = try Self.parse(definition(p12: wrapped))
        #expect(app.id == "blog" && app.topic == "com.example.blog" && app.platforms == [.apns, .webpush, .fcm, .hms])
        #expect(app.credentialDescription == "provider key ABC123DEFG of team DEF123GHIJ")
        #expect(app.credentialsByKind[.voip].map(GatewayConfiguration.App.describe)?.contains("certificate 'com.example.blog'") == true)
        #expect(!Self.trustsOnlyTheSystem(app))
        #expect(app.fcm?.serviceAccount.clientEmail == "push@blog-android.iam.gserviceaccount.com")
        #expect(app.hms?.app?.clientID == "104567891" && app.hms?.serviceAccount?.projectID == "101653523863785276")
        #expect(app.webhooks.first?.secret.bytes == Array("hook-secret".utf8))
        #expect(app.webPush?.key.publicKey.rawRepresentation == vapid.publicKey.rawRepresentation)
        // What the API lists of it: descriptions, never a secret.
        let described = app.credentialDescriptions.map { "\($0.0)=\($0.1)" }.joined(separator: "\n")
        #expect(described.contains("apns=provider key ABC123DEFG") && described.contains("fcm=service account push@blog-android"))
        for secret in ["PRIVATE KEY", "s3cr3t-value", "hook-secret"] { #expect(!described.contains(secret)) }
        #expect(try Self.parse(definition(p12: p12.base64EncodedString())).credentialsByKind[.voip] != nil)
    }

    @Test("the admin API takes no path on the server and no environment variable: each refused with the field and what to give instead")
    func pathsRefused() {
        let cases: [(String, String, String)] = [
            (#"{"apns": {"topic": "t", "environment": "sandbox", "authKey": {"file": "/etc/herald/AuthKey.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}}}"#, "apns.authKey.file", "give pem inline"),
            (#"{"apns": {"topic": "t", "environment": "sandbox", "certificate": {"file": "push.p12", "passwordEnv": "X"}}}"#, "apns.certificate.file", "give p12Base64 (with password) or pem (with keyPem) inline"),
            (#"{"apns": {"topic": "t", "environment": "sandbox", "certificate": {"p12Base64": "AAAA", "passwordEnv": "HOME"}}}"#, "apns.certificate.passwordEnv", "names a file or an environment variable"),
            (#"{"apns": {"topic": "t", "environment": "sandbox", "caFile": "/etc/ssl/ca.pem", "authKey": \#(Self.authKey)}}"#, "apns.caFile", "give caPem, the CA's PEM text, inline"),
            (#"{"webPush": {"vapidKeyFile": "/etc/vapid.pem", "subject": "mailto:a@b.c", "defaultURL": "https://b.example/"}}"#, "webPush.vapidKeyFile", "give vapidKeyPem inline"),
            (#"{"fcm": {"serviceAccountFile": "/etc/sa.json"}}"#, "fcm.serviceAccountFile", "give serviceAccount inline"),
            (#"{"hms": {"clientID": "104567891", "clientSecretEnv": "HOME"}}"#, "hms.clientSecretEnv", "give clientSecret inline"),
            (#"{"hms": {"serviceAccountFile": "/etc/huawei.json"}}"#, "hms.serviceAccountFile", "the admin API does not read"),
            (#"{"apns": {"topic": "t", "environment": "sandbox", "authKey": \#(Self.authKey)}, "webhooks": [{"url": "https://h.example/", "secretEnv": "HOME"}]}"#, "webhooks[0].secretEnv", "give secret inline"),
        ]
        for (json, field, words) in cases {
            let error = Self.refusal(json)
            #expect(error?.path == field, "\(error?.description ?? "accepted")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
        }
    }

    @Test("a credential that does not parse, a VAPID key on another curve, a wrong password, a wrong ID: each named by its field, the secret never echoed")
    func badCredentials() async throws {
        let garbage = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbCwgc2VjcmV0LWJ5dGVz\n-----END PRIVATE KEY-----\n"
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let scratch = try ScratchDirectory()
        let authority = try MockCertificateAuthority(name: "Inline Test CA")
        let push = try authority.issuePushCertificate(topic: "com.example.blog")
        let p12 = try Data(contentsOf: URL(fileURLWithPath: try await scratch.p12(
            certificatePEM: try push.certificate.serializeAsPEM().pemString, keyPEM: try push.privateKey.serializeAsPEM().pemString, legacy: false,
            password: "right", name: "push"))).base64EncodedString()
        let apns = { (credential: String) in #"{"apns": {"topic": "com.example.blog", "environment": "sandbox", \#(credential)}}"# }
        let cases: [(String, String, String, String?)] = [
            (apns(#""authKey": {"pem": \#(JSONValue.string(garbage).jsonString), "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}"#), "apns.authKey.pem", "PKCS#8", garbage),
            (apns(#""authKey": {"pem": \#(JSONValue.string(Self.providerKey.pemRepresentation).jsonString), "keyID": "bad key!", "teamID": "DEF123GHIJ"}"#), "apns.authKey.keyID", "letters and digits", nil),
            (apns(#""certificate": {"p12Base64": "\#(p12)", "password": "wrong"}"#), "apns.certificate.password", "not the .p12's password", "wrong"),
            (apns(#""certificate": {"p12Base64": "%%%not base64"}"#), "apns.certificate.p12Base64", "base64", nil),
            (apns(#""certificate": {"pem": \#(JSONValue.string(garbage).jsonString)}"#), "apns.certificate.pem", "CERTIFICATE", garbage),
            (#"{"webPush": {"vapidKeyPem": \#(JSONValue.string(p384).jsonString), "subject": "mailto:a@b.c", "defaultURL": "https://b.example/"}}"#, "webPush.vapidKeyPem", "P-256", p384),
            (#"{"fcm": {"serviceAccount": "not an object"}}"#, "fcm.serviceAccount", "JSON object", nil),
            (#"{"fcm": {"serviceAccount": {"type": "service_account", "private_key": \#(JSONValue.string(garbage).jsonString)}}}"#, "fcm.serviceAccount", "private_key", garbage),
            (#"{"id": "other", "fcm": {}}"#, "id", "the ID in the path", nil),
            (#"{"apns": {"topic": "t", "environment": "sandbox", "authKey": \#(Self.authKey), "caPem": "no certificate here"}}"#, "apns.caPem", "no PEM certificate", nil),
        ]
        for (json, field, words, secret) in cases {
            let error = Self.refusal(json)
            #expect(error?.path == field, "\(error?.description ?? "accepted")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
            if let secret {
                #expect(error?.description.contains(secret) == false, "the message holds no secret")
                #expect(error?.description.contains("bm90IGEga2V5") == false)
            }
        }
        #expect(Self.refusal(#"{"fcm": {}}"#, id: "Blog/1")?.path == "id")
    }

    @Test("the configuration file takes no inline secret: each refused, saying which field it takes; the CA's PEM is no secret and may be inline")
    func inlineRefusedInTheFile() throws {
        let scratch = try ScratchDirectory()
        _ = try scratch.write("AuthKey.p8", Self.providerKey.pemRepresentation)
        let key = APIKey.generate(name: "backend", apps: ["shop"]).entry
        func file(_ apns: String) throws -> String {
            try scratch.write("herald.json", #"{"database": "sqlite:h.db", "apps": [{"id": "shop", "apns": \#(apns)}], "apiKeys": [{"name": "b", "sha256": "\#(key.sha256Hex)", "apps": ["shop"]}]}"#)
        }
        let inline = #"{"topic": "t", "environment": "sandbox", "authKey": \#(Self.authKey)}"#
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(file: try file(inline)) }
        #expect(error?.field == "apps[0].apns.authKey.pem" && error?.message.contains("give file") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("PRIVATE KEY") == false)
        let ca = try MockCertificateAuthority(name: "File CA").certificate.serializeAsPEM().pemString
        let withCA = #"{"topic": "t", "environment": "sandbox", "caPem": \#(JSONValue.string(ca).jsonString), "authKey": {"file": "AuthKey.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}}"#
        #expect(!Self.trustsOnlyTheSystem(try GatewayConfiguration.load(file: try file(withCA)).apps[0]))
    }

    @Test("apiKeys: an admin key has no apps; an app key may name an app the file does not define (the API may); not an ID is refused")
    func keysInTheFile() throws {
        let scratch = try ScratchDirectory()
        _ = try scratch.write("AuthKey.p8", Self.providerKey.pemRepresentation)
        let app = #"{"id": "shop", "apns": {"topic": "t", "environment": "sandbox", "authKey": {"file": "AuthKey.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}}}"#
        let admin = APIKey.generateAdmin(name: "ops").entry
        let backend = APIKey.generate(name: "backend", apps: ["shop", "blog"]).entry
        func load(_ keys: String) throws -> GatewayConfiguration {
            try GatewayConfiguration.load(file: try scratch.write("keys.json", #"{"database": "sqlite:h.db", "apps": [\#(app)], "apiKeys": [\#(keys)]}"#))
        }
        let configuration = try load("\(admin.configurationEntry.jsonString), \(backend.configurationEntry.jsonString)")
        #expect(configuration.apiKeys[0].isAdmin && configuration.apiKeys[0].apps.isEmpty && configuration.apiKeys[0] == admin)
        #expect(!configuration.apiKeys[1].isAdmin && configuration.apiKeys[1].apps == ["shop", "blog"])
        let both = #expect(throws: ConfigurationError.self) { try load(#"{"name": "ops", "sha256": "\#(admin.sha256Hex)", "admin": true, "apps": ["shop"]}"#) }
        #expect(both?.field == "apiKeys[0].apps")
    }
}
