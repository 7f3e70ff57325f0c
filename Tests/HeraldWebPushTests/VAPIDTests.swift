import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldWebPush
import Testing

@Suite("VAPID keys and tokens (RFC 8292)")
struct VAPIDTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test("a token has the RFC's header and claims, verifies here, and verifies in Python's cryptography")
    func tokenShapeAndPythonCheck() async throws {
        let key = VAPIDKey.generate()
        let signer = try VAPIDSigner(key: key, subject: "mailto:ops@example.com")
        let header = try signer.authorization(origin: "https://web.push.apple.com", now: Self.now)
        let verified = try VAPID.verify(authorization: header, origin: "https://web.push.apple.com", now: Self.now)
        #expect(verified.claims.subject == "mailto:ops@example.com")
        #expect(verified.claims.expiresAt == Self.now.addingTimeInterval(12 * 3600))
        #expect(verified.publicKey == Array(key.publicKey.x963Representation))

        try await PythonPeers.require(.cryptography)
        // An independent check: Python decodes the JWT, reads its claims and verifies the
        // ES256 signature (raw R‖S) with the k= key.
        let script = """
            import base64, json, sys
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            def b(s): return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
            header = sys.argv[1]
            assert header.startswith('vapid t='), header
            t, k = header[len('vapid '):].split(', ')
            jwt = t[2:]; key = b(k[2:])
            h, c, s = jwt.split('.')
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key)
            sig = b(s)
            public.verify(utils.encode_dss_signature(int.from_bytes(sig[:32], 'big'), int.from_bytes(sig[32:], 'big')), (h + '.' + c).encode(), ec.ECDSA(hashes.SHA256()))
            print(json.dumps({'header': json.loads(b(h)), 'claims': json.loads(b(c))}, sort_keys=True))
            """
        let output = try await runCommand("python3", ["-c", script, header]).standardOutput
        let parsed = try JSONValue(parsing: output)
        #expect(parsed["header"] == .object(["typ": .string("JWT"), "alg": .string("ES256")]))
        #expect(parsed["claims"]?["aud"] == .string("https://web.push.apple.com"))
        #expect(parsed["claims"]?["sub"] == .string("mailto:ops@example.com"))
        #expect(parsed["claims"]?["exp"]?.intValue == Int(Self.now.timeIntervalSince1970) + 12 * 3600)
    }

    @Test("one token per origin, reused until an hour before it expires; never one per message")
    func signerReuses() throws {
        let signer = try VAPIDSigner(key: .generate(), subject: "https://example.com/contact")
        let apple = try signer.authorization(origin: "https://web.push.apple.com", now: Self.now)
        #expect(try signer.authorization(origin: "https://web.push.apple.com", now: Self.now.addingTimeInterval(10 * 3600)) == apple)
        let google = try signer.authorization(origin: "https://fcm.googleapis.com", now: Self.now)
        #expect(google != apple)
        let renewed = try signer.authorization(origin: "https://web.push.apple.com", now: Self.now.addingTimeInterval(11 * 3600 + 1))
        #expect(renewed != apple)
        #expect(try VAPID.verify(authorization: renewed, origin: "https://web.push.apple.com", now: Self.now.addingTimeInterval(11 * 3600 + 1)).claims.expiresAt
            == Self.now.addingTimeInterval(23 * 3600 + 1))
    }

    @Test("a push service's checks: wrong aud, expired, over 24 hours ahead, wrong key, no sub, not vapid, each named")
    func verificationFailures() throws {
        let key = VAPIDKey.generate()
        let origin = "https://push.example.net"
        func header(_ claims: VAPIDClaims, signedBy signer: VAPIDKey? = nil, presenting presented: VAPIDKey? = nil) throws -> String {
            let token = try VAPID.token(key: signer ?? key, claims: claims)
            return VAPID.authorization(token: token, key: presented ?? key)
        }
        func failure(_ authorization: String) -> String {
            do {
                _ = try VAPID.verify(authorization: authorization, origin: origin, now: Self.now)
                return "verified"
            } catch {
                #expect(error.code == .invalidVAPID)
                return error.message
            }
        }
        let good = VAPIDClaims(audience: origin, expiresAt: Self.now.addingTimeInterval(3600), subject: "mailto:a@example.com")
        #expect(failure(try header(good)) == "verified")
        var claims = good
        claims.audience = "https://other.example.net"
        #expect(failure(try header(claims)).contains("aud"))
        claims = good
        claims.expiresAt = Self.now.addingTimeInterval(-1)
        #expect(failure(try header(claims)).contains("expired"))
        claims.expiresAt = Self.now.addingTimeInterval(2 * 86400)
        #expect(failure(try header(claims)).contains("24 hours"))
        claims = good
        claims.subject = "mailto: <a@example.com>"
        #expect(failure(try header(claims)).contains("angle brackets"))
        #expect(failure(try header(good, signedBy: .generate())).contains("signature"))
        #expect(failure(try header(good, presenting: .generate())).contains("signature"))
        #expect(failure("Bearer abc").contains("vapid scheme"))
        #expect(failure("vapid t=abc, k=" + key.publicKeyBase64URL).contains("three base64url parts"))
        #expect(failure("vapid t=a.b.c, k=AAAA").contains("k= parameter"))
    }

    @Test("subjects: mailto: with an address or https: with a host; anything else refused at start")
    func subjects() throws {
        for good in ["mailto:ops@example.com", "https://example.com", "https://example.com/contact", "mailto:ops@push.example.co.uk?subject=x", "https://host.tailnet.ts.net:8443/"] {
            #expect(throws: Never.self) { try VAPID.checkSubject(good) }
        }
        for bad in ["ops@example.com", "mailto:", "mailto:nobody", "http://example.com", "https://", "mailto: ops@example.com", "",
                    // Apple answers BadJwtToken to a subject it cannot reach.
                    "mailto:ops@localhost", "mailto:ops@box.local", "https://localhost:8443", "https://app.localhost/", "mailto:ops@intranet", "mailto:ops@example.com."] {
            let error = #expect(throws: WebPushError.self, "\(bad)") { try VAPID.checkSubject(bad) }
            #expect(error?.code == .invalidSubject)
        }
        #expect(throws: WebPushError.self) { _ = try VAPIDSigner(key: .generate(), subject: "ops@example.com") }
    }

    @Test("keys load from PKCS#8 and SEC1 PEM as openssl writes them; other keys are refused, naming the problem")
    func keyFiles() async throws {
        let scratch = try ScratchDirectory()
        let sec1 = scratch.file("sec1.pem")
        try await runCommand("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", sec1])
        let pkcs8 = scratch.file("pkcs8.pem")
        try await runCommand("openssl", ["pkcs8", "-topk8", "-nocrypt", "-in", sec1, "-out", pkcs8])
        let fromSEC1 = try VAPIDKey(contentsOfFile: sec1)
        let fromPKCS8 = try VAPIDKey(contentsOfFile: pkcs8)
        #expect(fromSEC1.publicKeyBase64URL == fromPKCS8.publicKeyBase64URL)
        #expect(fromSEC1.publicKeyBase64URL.count == 87, "65 bytes, base64url without padding")
        let generated = VAPIDKey.generate()
        #expect(try VAPIDKey(pem: generated.pemRepresentation).publicKeyBase64URL == generated.publicKeyBase64URL)
        #expect(!"\(generated)".contains(generated.pemRepresentation) && "\(generated)".contains(generated.publicKeyBase64URL))

        let p384 = scratch.file("p384.pem")
        try await runCommand("openssl", ["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", p384])
        let rsa = scratch.file("rsa.pem")
        try await runCommand("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsa])
        for path in [p384, rsa] {
            let error = #expect(throws: WebPushError.self) { _ = try VAPIDKey(contentsOfFile: path) }
            #expect(error?.message.contains("P-256") == true, "\(String(describing: error))")
        }
        let missing = #expect(throws: WebPushError.self) { _ = try VAPIDKey(contentsOfFile: scratch.file("absent.pem")) }
        #expect(missing?.message.contains("cannot read") == true)
        #expect(throws: WebPushError.self) { _ = try VAPIDKey(pem: "not a key") }
    }
}
