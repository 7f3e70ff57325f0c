import Foundation
import HeraldCore
import HeraldTransport
@testable import HeraldFCM
import HeraldTestSupport
import Testing
import _CryptoExtras

/// A service account for tests: one RSA key, made once (key generation is the slow part).
enum TestAccount {
    static let key: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func make(tokenURI: String = FCMServiceAccount.googleTokenURI, key: _RSA.Signing.PrivateKey = key) throws -> FCMServiceAccount {
        try FCMServiceAccount(projectID: "herald-test", privateKeyID: "key-1", privateKey: key, clientEmail: "sender@herald-test.iam.gserviceaccount.com", tokenURI: tokenURI)
    }
}

@Suite("Service accounts and the OAuth assertion", .timeLimit(.minutes(6)))
struct FCMAssertionTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test("the assertion has Google's header and claims, and verifies in Python's cryptography (RSA PKCS#1 v1.5, SHA-256)")
    func assertionShapeAndPythonCheck() async throws {
        let account = try TestAccount.make()
        let assertion = try FCMAssertion.sign(for: account, now: Self.now)
        let claims = try FCMAssertion.verify(
            assertion, publicKey: account.publicKey, issuer: account.clientEmail, keyID: "key-1", audiences: [FCMServiceAccount.googleTokenURI], now: Self.now)
        #expect(claims.expiresAt - claims.issuedAt == 3600)

        try await PythonPeers.require(.cryptography)
        // An independent check: Python splits the JWT, verifies its signature with the public
        // key, and prints only the header and claims (never the token).
        let script = """
            import base64, json, sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            def b(s): return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
            jwt, pem = sys.argv[1], sys.argv[2]
            h, c, s = jwt.split('.')
            public = serialization.load_pem_public_key(pem.encode())
            public.verify(b(s), (h + '.' + c).encode(), padding.PKCS1v15(), hashes.SHA256())
            try:
                public.verify(b(s), (h + '.' + c + 'x').encode(), padding.PKCS1v15(), hashes.SHA256())
                print('tampered input verified')
                sys.exit(1)
            except Exception:
                pass
            print(json.dumps({'header': json.loads(b(h)), 'claims': json.loads(b(c))}, sort_keys=True))
            """
        let output = try await runCommand("python3", ["-c", script, assertion, account.publicKey.pemRepresentation]).standardOutput
        let parsed = try JSONValue(parsing: output)
        #expect(parsed["header"] == ["alg": "RS256", "typ": "JWT", "kid": "key-1"])
        let seconds = Int(Self.now.timeIntervalSince1970)
        #expect(
            parsed["claims"] == [
                "iss": "sender@herald-test.iam.gserviceaccount.com", "scope": "https://www.googleapis.com/auth/firebase.messaging",
                "aud": "https://oauth2.googleapis.com/token", "iat": .int(seconds), "exp": .int(seconds + 3600),
            ])
    }

    @Test("a token endpoint's checks refuse each bad assertion, naming the check")
    func verifierRefusals() throws {
        let account = try TestAccount.make()
        let audiences: Set = [FCMServiceAccount.googleTokenURI]
        func refusal(_ assertion: String, key: _RSA.Signing.PublicKey? = nil, keyID: String = "key-1", now: Date = Self.now) -> String? {
            do {
                _ = try FCMAssertion.verify(
                    assertion, publicKey: key ?? account.publicKey, issuer: account.clientEmail, keyID: keyID, audiences: audiences, now: now)
                return nil
            } catch {
                return error.message
            }
        }
        let good = try FCMAssertion.sign(for: account, now: Self.now)
        #expect(refusal(good) == nil)
        #expect(refusal(good, key: try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey) == "Invalid JWT Signature.")
        #expect(refusal(good, keyID: "key-2")?.contains("kid") == true)
        #expect(refusal(good, now: Self.now.addingTimeInterval(3601))?.contains("expired") == true)
        #expect(refusal(good, now: Self.now.addingTimeInterval(-120))?.contains("iat") == true)
        #expect(refusal(try FCMAssertion.sign(for: try TestAccount.make(tokenURI: "https://example.com/token"), now: Self.now))?.contains("aud") == true)
        #expect(refusal(try FCMAssertion.sign(for: account, now: Self.now, scope: "https://www.googleapis.com/auth/userinfo.email"))?.contains("scope") == true)
        #expect(refusal(try FCMAssertion.sign(for: account, now: Self.now, scope: FCMAssertion.cloudPlatformScope)) == nil)
        #expect(refusal(try FCMAssertion.sign(for: account, now: Self.now, lifetime: 7200)) == nil, "a longer lifetime is cut to an hour")
        let parts = good.split(separator: ".")
        #expect(refusal(parts[0] + "." + parts[1]) != nil)
        #expect(refusal(String(repeating: "a", count: 20000))?.contains("over") == true)
    }

    @Test("a key file is read; each missing or bad field is named; a broken key is a clear error; printing never shows the key")
    func serviceAccountFile() throws {
        let account = try TestAccount.make()
        let json = account.jsonRepresentation
        let read = try FCMServiceAccount(json: json)
        #expect(read.projectID == "herald-test" && read.privateKeyID == "key-1" && read.tokenURI == FCMServiceAccount.googleTokenURI)
        #expect(read.publicKey.derRepresentation == account.publicKey.derRepresentation)
        let pem = account.privateKey.pkcs8PEMRepresentation
        for printed in ["\(read)", String(reflecting: read), "\(Mirror(reflecting: read).children.map { "\($0.value)" })"] {
            #expect(!printed.contains("PRIVATE KEY") && !printed.contains(pem.split(separator: "\n")[1]))
        }

        let object = try #require(try JSONValue(parsing: json).objectValue)
        func message(_ change: (inout [String: JSONValue]) -> Void) -> String? {
            var copy = object
            change(&copy)
            var writer = JSONWriter()
            writer.value(.object(copy))
            do {
                _ = try FCMServiceAccount(json: writer.bytes)
                return nil
            } catch {
                #expect(!error.message.contains(pem.split(separator: "\n")[1]), "never the key's material")
                return error.message
            }
        }
        for field in ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
            #expect(message { $0[field] = nil }?.contains(field) == true, "missing \(field)")
        }
        #expect(message { $0["type"] = "authorized_user" }?.contains("service_account") == true)
        #expect(message { $0["private_key"] = .string(pem.replacingOccurrences(of: "A", with: "B")) }?.contains("private_key is not an RSA private key") == true)
        #expect(message { $0["private_key"] = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n" }?.contains("private_key") == true)
        #expect(message { $0["token_uri"] = "http://example.com/token" }?.contains("token_uri") == true, "clear text only to loopback")
        #expect(message { $0["project_id"] = 42 }?.contains("project_id") == true)
        #expect(throws: FCMError.self) { try FCMServiceAccount(json: Array("not json".utf8)) }
        do {
            _ = try FCMServiceAccount(contentsOfFile: "/nonexistent/sa.json")
            Issue.record("a missing file was read")
        } catch {
            #expect(error.message.contains("/nonexistent/sa.json") && error.code == .invalidServiceAccount)
        }
    }

    @Test("form encoding of the token request")
    func formEncoding() {
        #expect(FCMAccessTokenProvider.formEncoded(FCMAccessTokenProvider.grantType) == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        #expect(FCMAccessTokenProvider.formEncoded("a.b-c_d~e f+g") == "a.b-c_d~e%20f%2Bg")
    }
}

@Suite("The access token's refresh margin and cache", .timeLimit(.minutes(6)))
struct FCMTokenCacheTests {
    @Test("the margin scales with the lifetime: a tenth, at most five minutes")
    func margins() {
        #expect(BearerTokenCache.refreshMargin(lifetime: .seconds(3600)) == .seconds(300))
        #expect(BearerTokenCache.refreshMargin(lifetime: .seconds(60)) == .seconds(6))
        #expect(BearerTokenCache.refreshMargin(lifetime: .seconds(1)) == .milliseconds(100))
    }

    @Test("use until the margin, use and refresh within it, wait once expired or invalidated; a newer token survives an old 401")
    func cache() {
        let start = ContinuousClock().now
        var cache = BearerTokenCache()
        #expect(cache.next(now: start) == .wait)
        cache.store("t1", lifetime: .seconds(60), requested: start)
        #expect(cache.next(now: start + .seconds(53)) == .use("t1"))
        #expect(cache.next(now: start + .seconds(55)) == .useAndRefresh("t1"))
        #expect(cache.next(now: start + .seconds(60)) == .wait)
        cache.store("t2", lifetime: .seconds(60), requested: start)
        cache.invalidate("t1")
        #expect(cache.next(now: start) == .use("t2"), "a 401 for an older token drops nothing")
        cache.invalidate("t2")
        #expect(cache.next(now: start) == .wait)
    }
}
