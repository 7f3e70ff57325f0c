import Crypto
import HeraldCore

/// Message encryption for Web Push (RFC 8291): `aes128gcm` content coding (RFC 8188) with a key
/// agreed between a fresh ephemeral P-256 key and the subscription's `p256dh`, mixed with its
/// `auth` secret. One record per message, as RFC 8291 §4 requires.
public enum WebPushEncryption {
    /// The record size written in every header: 4096, the payload size every push service must
    /// accept (RFC 8030 §7.2).
    public static let recordSize = 4096
    /// The `aes128gcm` header: salt (16), record size (4), key ID length (1), key ID (the
    /// ephemeral public key, 65).
    public static let headerCount = 86
    /// The largest plaintext one message carries: 4096 − 86 (header) − 16 (tag) − 1 (delimiter).
    public static let maximumPlaintextCount = recordSize - headerCount - 16 - 1

    /// Encrypts `plaintext` for `subscription` with a fresh ephemeral key and salt.
    public static func encrypt(_ plaintext: some Collection<UInt8>, for subscription: WebPushSubscription) throws(WebPushError) -> [UInt8] {
        // One read of the system's random source for the salt (16 bytes) and the ephemeral key's
        // scalar (32). The key is made from its scalar: swift-crypto's `PrivateKey()` also runs
        // BoringSSL's FIPS pairwise test (an ECDSA signature and its verification) on every
        // key, which tripled the cost of each message (measured with perf).
        var random = [UInt8](repeating: 0, count: 48)
        for _ in 0..<8 {
            fillRandom(&random)
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: random[16..<48]) {
                return try encrypt(
                    plaintext, userAgentKey: subscription.userAgentKey, userAgentPublic: subscription.p256dh, authSecret: subscription.authSecret,
                    ephemeralKey: key, salt: Array(random[0..<16]))
            }
        }
        // A scalar of 0 or past the group's order, eight times: the random source is broken.
        throw WebPushError(.invalidSubscription, "could not make an ephemeral P-256 key")
    }

    /// Fills `bytes` from the system's random source, 8 bytes a call.
    private static func fillRandom(_ bytes: inout [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                var word = generator.next()
                let count = min(8, buffer.count - offset)
                withUnsafeBytes(of: &word) { buffer.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: count) }
                offset += count
            }
        }
    }

    /// Encrypts with the given ephemeral key and salt: for known-answer tests only. Reusing either
    /// for two messages breaks the encryption.
    public static func encrypt(
        _ plaintext: some Collection<UInt8>, userAgentKey: P256.KeyAgreement.PublicKey, authSecret: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey, salt: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        try encrypt(
            plaintext, userAgentKey: userAgentKey, userAgentPublic: Array(userAgentKey.x963Representation), authSecret: authSecret,
            ephemeralKey: ephemeralKey, salt: salt)
    }

    /// As above, with the browser's key also as its bytes (the subscription keeps them: no
    /// conversion per message).
    static func encrypt(
        _ plaintext: some Collection<UInt8>, userAgentKey: P256.KeyAgreement.PublicKey, userAgentPublic: [UInt8], authSecret: [UInt8],
        ephemeralKey: P256.KeyAgreement.PrivateKey, salt: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextCount else {
            throw WebPushError(
                .payloadTooLarge,
                "a Web Push message carries at most \(maximumPlaintextCount) bytes of plaintext (one 4096-byte record, RFC 8291 §4); this one has \(plaintext.count)"
            )
        }
        guard salt.count == 16, authSecret.count == 16 else {
            throw WebPushError(.invalidSubscription, "the salt and the auth secret must be 16 bytes each")
        }
        let senderPublic = Array(ephemeralKey.publicKey.x963Representation)
        let (key, nonce) = try keys(
            privateKey: ephemeralKey, peer: userAgentKey, userAgentPublic: userAgentPublic,
            senderPublic: senderPublic, authSecret: authSecret, salt: salt)
        var record = [UInt8]()
        record.reserveCapacity(plaintext.count + 1)
        record.append(contentsOf: plaintext)
        record.append(0x02)  // the last (and only) record's delimiter (RFC 8188 §2)
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(record, using: key, nonce: nonce)
        } catch {
            throw WebPushError(.decryptionFailed, "AES-GCM sealing failed")
        }
        var body = [UInt8]()
        body.reserveCapacity(headerCount + record.count + 16)
        body.append(contentsOf: salt)
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body.append(contentsOf: senderPublic)
        body.append(contentsOf: sealed.ciphertext)
        body.append(contentsOf: sealed.tag)
        return body
    }

    /// Decrypts a message as the browser does, with the subscription's private key and auth
    /// secret (the mock push service uses it). Refuses anything but one `aes128gcm` record whose
    /// key ID is a P-256 public key.
    public static func decrypt(_ body: [UInt8], privateKey: P256.KeyAgreement.PrivateKey, authSecret: [UInt8]) throws(WebPushError) -> [UInt8] {
        guard body.count >= headerCount + 16 + 1 else {
            throw WebPushError(.decryptionFailed, "an aes128gcm body has an 86-byte header and at least 17 bytes of record; this one has \(body.count) bytes")
        }
        let salt = Array(body[0..<16])
        let size = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        guard size >= 18 else { throw WebPushError(.decryptionFailed, "the aes128gcm record size \(size) is below 18 (RFC 8188 §2.1)") }
        guard body[20] == 65 else {
            throw WebPushError(.decryptionFailed, "the aes128gcm key ID must be the sender's 65-byte P-256 public key (RFC 8291 §4); its length is \(body[20])")
        }
        let senderPublic = Array(body[21..<86])
        guard let senderKey = try? P256.KeyAgreement.PublicKey(x963Representation: senderPublic) else {
            throw WebPushError(.decryptionFailed, "the aes128gcm key ID is not a point on P-256")
        }
        let record = body[86...]
        guard record.count <= size else {
            throw WebPushError(.decryptionFailed, "a Web Push message is one record (RFC 8291 §4); this body is longer than its record size \(size)")
        }
        let (key, nonce) = try keys(
            privateKey: privateKey, peer: senderKey, userAgentPublic: Array(privateKey.publicKey.x963Representation),
            senderPublic: senderPublic, authSecret: authSecret, salt: salt)
        var plaintext: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: record.dropLast(16), tag: record.suffix(16))
            plaintext = Array(try AES.GCM.open(box, using: key))
        } catch {
            throw WebPushError(.decryptionFailed, "the message does not decrypt with this subscription's keys (wrong keys, or tampered)")
        }
        // Padding is zeros after the delimiter; the last record's delimiter is 2 (RFC 8188 §2).
        while plaintext.last == 0 { plaintext.removeLast() }
        guard plaintext.last == 0x02 else {
            throw WebPushError(.decryptionFailed, "the record does not end with the last-record delimiter 0x02 (RFC 8188 §2)")
        }
        plaintext.removeLast()
        return plaintext
    }

    /// HKDF-Expand's info for the content encryption key and the nonce, with T(1)'s counter byte.
    private static let cekInfo = Array("Content-Encoding: aes128gcm".utf8) + [0, 1]
    private static let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0, 1]

    /// The content encryption key and nonce (RFC 8291 §3.3-3.4, RFC 8188 §2.2-2.3).
    private static func keys(
        privateKey: P256.KeyAgreement.PrivateKey, peer: P256.KeyAgreement.PublicKey, userAgentPublic: [UInt8], senderPublic: [UInt8],
        authSecret: [UInt8], salt: [UInt8]
    ) throws(WebPushError) -> (SymmetricKey, AES.GCM.Nonce) {
        let shared: SharedSecret
        do {
            shared = try privateKey.sharedSecretFromKeyAgreement(with: peer)
        } catch {
            throw WebPushError(.invalidSubscription, "ECDH with the subscription's p256dh key failed")
        }
        // PRK_key = HKDF-Extract(auth_secret, ecdh_secret); IKM = HKDF-Expand(PRK_key, key_info, 32)
        // with key_info = "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public (RFC 8291 §3.4). Then
        // PRK = HKDF-Extract(salt, IKM), and CEK and NONCE from it (RFC 8188 §2.2, §2.3). Each
        // expansion is one HMAC block (≤ 32 bytes): T(1) = HMAC(PRK, info ‖ 0x01) (RFC 5869 §2.3),
        // written out so each message costs five HMACs and no intermediate key objects.
        let keyPRK = shared.withUnsafeBytes { HMAC<SHA256>.authenticationCode(for: $0, using: SymmetricKey(data: authSecret)) }
        var keyInfo = [UInt8]()
        keyInfo.reserveCapacity(14 + 130 + 1)
        keyInfo.append(contentsOf: "WebPush: info".utf8)
        keyInfo.append(0)
        keyInfo.append(contentsOf: userAgentPublic)
        keyInfo.append(contentsOf: senderPublic)
        keyInfo.append(1)
        let ikm = HMAC<SHA256>.authenticationCode(for: keyInfo, using: SymmetricKey(data: keyPRK))
        let prk = SymmetricKey(data: ikm.withUnsafeBytes { HMAC<SHA256>.authenticationCode(for: $0, using: SymmetricKey(data: salt)) })
        var cekMAC = HMAC<SHA256>(key: prk)
        var nonceMAC = cekMAC
        cekMAC.update(data: Self.cekInfo)
        nonceMAC.update(data: Self.nonceInfo)
        let cek = SymmetricKey(data: Array(cekMAC.finalize()).prefix(16))
        let nonce = try? AES.GCM.Nonce(data: Array(nonceMAC.finalize()).prefix(12))
        guard let nonce else { throw WebPushError(.decryptionFailed, "nonce derivation failed") }
        return (cek, nonce)
    }
}
