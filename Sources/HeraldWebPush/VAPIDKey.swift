import Crypto
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An application server's VAPID key (RFC 8292): the P-256 key whose public half a page passes
/// to `pushManager.subscribe({applicationServerKey})` and whose private half signs every push
/// request's JWT.
///
/// Printing a key shows its public key only, never the private key.
public struct VAPIDKey: Sendable {
    let privateKey: P256.Signing.PrivateKey

    /// A key held in memory.
    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// Loads a key from PEM text: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`),
    /// on the P-256 curve, as `openssl ecparam -name prime256v1 -genkey` or `web-push
    /// generate-vapid-keys` make. Anything else is refused with what it is.
    public init(pem: String) throws(WebPushError) {
        guard pem.contains("-----BEGIN") else {
            throw WebPushError(.invalidKey, "a VAPID key must be PEM text (-----BEGIN PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)")
        }
        if pem.contains("ENCRYPTED") {
            throw WebPushError(.invalidKey, "the VAPID key is encrypted; decrypt it first (openssl pkcs8 -in key.pem -out plain.pem)")
        }
        do {
            self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw WebPushError(.invalidKey, "the VAPID key is not a P-256 (prime256v1) EC private key in PKCS#8 or SEC1 PEM")
        }
    }

    /// Loads a key from a PEM file.
    public init(contentsOfFile path: String) throws(WebPushError) {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, limit: 1 << 20)
        } catch {
            throw WebPushError(.invalidKey, "cannot read VAPID key file '\(path)': \(error.reason)")
        }
        do {
            try self.init(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw WebPushError(error.code, "VAPID key file '\(path)': \(error.message)")
        }
    }

    /// A fresh random key (`herald webpush keygen`, tests, the demo).
    public static func generate() -> VAPIDKey { VAPIDKey(privateKey: P256.Signing.PrivateKey()) }

    /// The public key.
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// The public key as the uncompressed point (65 bytes, `04‖X‖Y`), base64url without padding:
    /// the `applicationServerKey` a page subscribes with, and the `k` of every request.
    public var publicKeyBase64URL: String { Base64URL.encode(publicKey.x963Representation) }

    /// The private key as PKCS#8 PEM text. A secret: write it only to files the user asked for.
    public var pemRepresentation: String { privateKey.pemRepresentation }
}

extension VAPIDKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "VAPIDKey(public: \(publicKeyBase64URL))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKeyBase64URL]) }
}
