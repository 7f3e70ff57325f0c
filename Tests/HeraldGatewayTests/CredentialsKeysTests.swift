import Foundation
import HeraldAPNS
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldGateway

/// Sealing app definitions at rest: AES-GCM with the current key, opened by it or a previous one
/// (a rotation), bound to the app; keys read from the environment or a file, never shown.
@Suite("Credentials keys")
struct CredentialsKeysTests {
    static let definition = Array(#"{"id":"blog","fcm":{"serviceAccount":{"private_key":"-----BEGIN PRIVATE KEY-----secret"}}}"#.utf8)

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    @Test("sealed and opened again: the same bytes; the sealed bytes hold none of them, and differ each time")
    func roundTrip() throws {
        let keys = try CredentialsKeys(current: CredentialsKeys.randomKey())
        let sealed = try keys.seal(Self.definition, app: "blog")
        #expect(try keys.open(sealed, sealedWith: keys.current.fingerprint, app: "blog") == Self.definition)
        #expect(!String(decoding: sealed, as: UTF8.self).contains("PRIVATE KEY"))
        #expect(try keys.seal(Self.definition, app: "blog") != sealed, "a fresh nonce each time")
        #expect(keys.current.fingerprint.count == 16 && keys.current.fingerprint.allSatisfy(\.isHexDigit))
    }

    @Test("another key, changed bytes, another app's row: none opens, and the error says why without a secret")
    func wrongKey() throws {
        let key = CredentialsKeys.randomKey()
        let keys = try CredentialsKeys(current: key)
        let other = try CredentialsKeys(current: CredentialsKeys.randomKey())
        let sealed = try keys.seal(Self.definition, app: "blog")
        let unknown = #expect(throws: CredentialsKeyError.self) { try other.open(sealed, sealedWith: keys.current.fingerprint, app: "blog") }
        #expect(unknown?.code == .unknownKey && unknown?.message.contains(CredentialsKeys.previousEnvironmentVariable) == true)
        // The other key claiming this fingerprint (a database edited by hand) still does not open it.
        let forged = #expect(throws: CredentialsKeyError.self) { try other.open(sealed, sealedWith: other.current.fingerprint, app: "blog") }
        #expect(forged?.code == .cannotOpen)
        var changed = sealed
        changed[changed.count / 2] ^= 1
        #expect(throws: CredentialsKeyError.self) { try keys.open(changed, sealedWith: keys.current.fingerprint, app: "blog") }
        let moved = #expect(throws: CredentialsKeyError.self) { try keys.open(sealed, sealedWith: keys.current.fingerprint, app: "shop") }
        #expect(moved?.code == .cannotOpen)
        for error in [unknown, forged, moved].compactMap({ $0 }) {
            #expect(!error.description.contains(Self.base64(key)) && !error.description.contains("PRIVATE"))
        }
    }

    @Test("rotation: the new key seals, the previous one still opens what it sealed; without it, what it sealed names the key it needs")
    func rotation() throws {
        let old = CredentialsKeys.randomKey()
        let new = CredentialsKeys.randomKey()
        let before = try CredentialsKeys(current: old)
        let sealed = try before.seal(Self.definition, app: "blog")
        let during = try CredentialsKeys(current: new, previous: [old])
        #expect(during.current.fingerprint != before.current.fingerprint && during.previous.map(\.fingerprint) == [before.current.fingerprint])
        let opened = try during.open(sealed, sealedWith: before.current.fingerprint, app: "blog")
        let again = try during.seal(opened, app: "blog")
        let after = try CredentialsKeys(current: new)
        #expect(try after.open(again, sealedWith: during.current.fingerprint, app: "blog") == Self.definition)
        let missing = #expect(throws: CredentialsKeyError.self) { try after.open(sealed, sealedWith: before.current.fingerprint, app: "blog") }
        #expect(missing?.message.contains(before.current.fingerprint) == true)
    }

    @Test("keys from the environment or from a file (current first, previous after), not both; a bad key named by where it is, never shown")
    func loading() throws {
        let scratch = try ScratchDirectory()
        let current = Self.base64(CredentialsKeys.randomKey())
        let previous = Self.base64(CredentialsKeys.randomKey())
        #expect(try CredentialsKeys.load(file: nil, environment: [:]) == nil)
        let fromEnvironment = try #require(try CredentialsKeys.load(file: nil, environment: ["HERALD_CREDENTIALS_KEY": current, "HERALD_CREDENTIALS_KEY_PREVIOUS": previous]))
        let file = try scratch.write("credentials.key", "\(current)\n\n  \(previous)  \n")
        let fromFile = try #require(try CredentialsKeys.load(file: file, environment: [:]))
        #expect(fromFile.current.fingerprint == fromEnvironment.current.fingerprint)
        #expect(fromFile.previous.map(\.fingerprint) == fromEnvironment.previous.map(\.fingerprint) && fromFile.previous.count == 1)
        #expect(!fromFile.description.contains(current) && !"\(fromFile)".contains(previous) && String(reflecting: fromFile).contains(fromFile.current.fingerprint))

        let short = Self.base64(Array(repeating: 7, count: 16))
        let cases: [(String?, [String: String], String, String)] = [
            (file, ["HERALD_CREDENTIALS_KEY": current], "credentialsKeyFile", "give the credentials key one way"),
            (nil, ["HERALD_CREDENTIALS_KEY": short], "HERALD_CREDENTIALS_KEY", "a credentials key is 32"),
            (nil, ["HERALD_CREDENTIALS_KEY": "not base64!"], "HERALD_CREDENTIALS_KEY", "not base64"),
            (nil, ["HERALD_CREDENTIALS_KEY_PREVIOUS": previous], "HERALD_CREDENTIALS_KEY_PREVIOUS", "without HERALD_CREDENTIALS_KEY"),
            (nil, ["HERALD_CREDENTIALS_KEY": current, "HERALD_CREDENTIALS_KEY_PREVIOUS": short], "HERALD_CREDENTIALS_KEY_PREVIOUS", "a credentials key is 32"),
            (try scratch.write("empty.key", "\n"), [:], "credentialsKeyFile", "holds no key"),
            (try scratch.write("short.key", short), [:], "credentialsKeyFile", "a credentials key is 32"),
        ]
        for (file, environment, field, words) in cases {
            let error = #expect(throws: FieldError.self) { try CredentialsKeys.load(file: file, environment: environment) }
            #expect(error?.path == field, "\(error?.description ?? "accepted")")
            #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
            #expect(error?.description.contains(short) == false && error?.description.contains(current) == false)
        }
    }

    @Test("merged: the file's apps first and winning an ID both define, the API's after in ID order; the API's keys each for their app")
    func merging() throws {
        let credentials = APNSCredentials.providerToken(ProviderKey.generate())
        let file = GatewayConfiguration(
            database: try StoreURL("sqlite:merge.db"), apps: [GatewayConfiguration.App(id: "shop", topic: "com.example.shop", environment: .sandbox, credentials: credentials)],
            apiKeys: [APIKey.generateAdmin(name: "ops").entry])
        let stored = ["zoo", "shop", "blog"].map { GatewayConfiguration.App(id: $0, topic: "com.example.\($0)", environment: .production, credentials: credentials) }
        let key = StoredAppKey(app: "blog", name: "backend", sha256: Array(repeating: 3, count: 32), createdAt: Date())
        let (merged, shadowed) = file.merging(apps: stored, keys: [key])
        #expect(merged.apps.map(\.id) == ["shop", "blog", "zoo"] && shadowed == ["shop"])
        #expect(merged.app("shop")?.source == .file && merged.app("shop")?.environment == .sandbox && merged.app("blog")?.source == .api)
        #expect(merged.apiKeys.count == 2 && merged.apiKeys[1] == APIKey(name: "blog/backend", sha256: key.sha256, apps: ["blog"]))
    }
}
