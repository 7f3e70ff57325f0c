import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldWebPush
import Testing

@Suite("Web Push message encryption (RFC 8291)")
struct WebPushEncryptionTests {
    /// RFC 8291 Appendix A: the example's keys, salt and secret, and the message they give.
    enum Example {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
        static let message =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ base64url: String) -> [UInt8] { Base64URL.decode(base64url)! }

    @Test("RFC 8291 Appendix A: the example encrypts to the RFC's bytes, and decrypts back")
    func appendixA() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Example.senderPrivate))
        let receiverPublic = try P256.KeyAgreement.PublicKey(x963Representation: Self.bytes(Example.receiverPublic))
        let message = try WebPushEncryption.encrypt(
            Example.plaintext, userAgentKey: receiverPublic, authSecret: Self.bytes(Example.authSecret), ephemeralKey: sender,
            salt: Self.bytes(Example.salt))
        #expect(Base64URL.encode(message) == Example.message)
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Example.receiverPrivate))
        #expect(try WebPushEncryption.decrypt(message, privateKey: receiver, authSecret: Self.bytes(Example.authSecret)) == Example.plaintext)
    }

    @Test("a fresh key and salt per message; the largest plaintext makes a 4096-byte body, one byte more is refused")
    func freshAndBounded() throws {
        let browser = Browser()
        let first = try WebPushEncryption.encrypt([1, 2, 3], for: browser.subscription)
        let second = try WebPushEncryption.encrypt([1, 2, 3], for: browser.subscription)
        #expect(first[0..<16] != second[0..<16], "salt")
        #expect(first[21..<86] != second[21..<86], "ephemeral key")
        let largest = [UInt8](repeating: 0x61, count: WebPushEncryption.maximumPlaintextCount)
        #expect(WebPushEncryption.maximumPlaintextCount == 3993)
        let body = try WebPushEncryption.encrypt(largest, for: browser.subscription)
        #expect(body.count == 4096)
        #expect(try browser.decrypt(body) == largest)
        let error = #expect(throws: WebPushError.self) { _ = try WebPushEncryption.encrypt(largest + [0x61], for: browser.subscription) }
        #expect(error?.code == .payloadTooLarge)
        #expect(error?.message.contains("3993") == true)
    }

    @Test("tampering, a wrong auth secret, a second record or a truncated header: refused, never a wrong plaintext")
    func tampering() throws {
        let browser = Browser()
        let body = try WebPushEncryption.encrypt(Array("secret".utf8), for: browser.subscription)
        var flipped = body
        flipped[100] ^= 1
        #expect(throws: WebPushError.self) { _ = try browser.decrypt(flipped) }
        #expect(throws: WebPushError.self) {
            _ = try WebPushEncryption.decrypt(body, privateKey: browser.privateKey, authSecret: [UInt8](repeating: 7, count: 16))
        }
        #expect(throws: WebPushError.self) { _ = try browser.decrypt(Array(body.prefix(90))) }
        var wrongKeyLength = body
        wrongKeyLength[20] = 64
        #expect(throws: WebPushError.self) { _ = try browser.decrypt(wrongKeyLength) }
        var smallRecords = body
        smallRecords.replaceSubrange(16..<20, with: [0, 0, 0, 18])
        #expect(throws: WebPushError.self) { _ = try browser.decrypt(smallRecords) }
    }

    @Test("Python's http_ece (an independent implementation) decrypts what Herald encrypted")
    func httpECEDecrypts() async throws {
        try await PythonPeers.require(.httpECE, .cryptography)
        let scratch = try ScratchDirectory()
        let browser = Browser()
        var lines: [String] = [Base64URL.encode(browser.privateKey.rawRepresentation), Base64URL.encode(browser.subscription.authSecret)]
        let plaintexts: [[UInt8]] = [
            Array("{\"title\":\"Hello\",\"body\":\"from Herald\"}".utf8), [], [UInt8](repeating: 0xFF, count: 3993), Array("é\u{0}✓".utf8),
        ]
        for plaintext in plaintexts {
            lines.append(Base64URL.encode(try WebPushEncryption.encrypt(plaintext, for: browser.subscription)))
        }
        let input = try scratch.write("messages.txt", lines.joined(separator: "\n"))
        let script = """
            import base64, sys, http_ece
            from cryptography.hazmat.primitives.asymmetric import ec
            def b(s): return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
            lines = open(sys.argv[1]).read().split('\\n')
            key = ec.derive_private_key(int.from_bytes(b(lines[0]), 'big'), ec.SECP256R1())
            for line in lines[2:]:
                plain = http_ece.decrypt(b(line), private_key=key, auth_secret=b(lines[1]), version='aes128gcm')
                print(base64.urlsafe_b64encode(plain).decode().rstrip('='))
            """
        let output = try await runCommand("python3", ["-c", script, input]).standardOutput
        let decrypted = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { Base64URL.decode($0)! }
        #expect(decrypted == plaintexts)
    }
}

/// A browser's side of a subscription: its private key and auth secret.
struct Browser {
    let privateKey = P256.KeyAgreement.PrivateKey()
    let subscription: WebPushSubscription

    init(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc") {
        var secret = [UInt8](repeating: 0, count: 16)
        for index in secret.indices { secret[index] = UInt8.random(in: 0...255) }
        subscription = try! WebPushSubscription(
            endpoint: endpoint, p256dh: Base64URL.encode(privateKey.publicKey.x963Representation), auth: Base64URL.encode(secret))
    }

    func decrypt(_ body: [UInt8]) throws -> [UInt8] {
        try WebPushEncryption.decrypt(body, privateKey: privateKey, authSecret: subscription.authSecret)
    }
}
