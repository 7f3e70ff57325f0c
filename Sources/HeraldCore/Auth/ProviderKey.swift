import Crypto
import SwiftASN1

/// An APNs auth key (the `.p8` file from Apple's developer account) with its Key ID and Team ID:
/// what signs provider tokens (apns-spec §2).
///
/// Printing a key shows its identifiers only, never key material.
public struct ProviderKey: Sendable {
    /// The 10-character Key ID, sent as the JWT header's `kid`.
    public let keyID: String
    /// The 10-character Team ID, sent as the JWT claim `iss`.
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// Loads a key from the PEM text of a `.p8` file: PKCS#8 (`BEGIN PRIVATE KEY`) holding an EC
    /// P-256 key. Anything else is refused with what it is and how to get the right file.
    public init(pem: String, keyID: String, teamID: String) throws(ProviderKeyError) {
        try Self.checkIdentifier(keyID, name: "key ID", code: .invalidKeyID)
        try Self.checkIdentifier(teamID, name: "team ID", code: .invalidTeamID)
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = try Self.parseP8(pem)
    }

    /// Loads a key from a `.p8` file.
    public init(contentsOfFile path: String, keyID: String, teamID: String) throws(ProviderKeyError) {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, limit: 1 << 20)
        } catch {
            throw ProviderKeyError(.unreadableFile, "cannot read auth key file '\(path)': \(error.reason)")
        }
        do {
            try self.init(pem: String(decoding: bytes, as: UTF8.self), keyID: keyID, teamID: teamID)
        } catch {
            throw ProviderKeyError(error.code, "auth key file '\(path)': \(error.message)")
        }
    }

    /// A key from a P-256 private key held in memory.
    public init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) throws(ProviderKeyError) {
        try Self.checkIdentifier(keyID, name: "key ID", code: .invalidKeyID)
        try Self.checkIdentifier(teamID, name: "team ID", code: .invalidTeamID)
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// A fresh random key, for tests, the mock server and the demo.
    public static func generate(keyID: String = "HERALDKEY1", teamID: String = "HERALDTEAM") -> ProviderKey {
        // The identifiers are valid constants or caller-chosen; an invalid one is a programming error.
        try! ProviderKey(privateKey: P256.Signing.PrivateKey(), keyID: keyID, teamID: teamID)
    }

    /// The public key that verifies this key's tokens (what APNs, or the mock, checks against).
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// The private key as `.p8` PEM text. A secret: write it only to files the user asked for.
    public var pemRepresentation: String { privateKey.pemRepresentation }

    /// Signs `message` with ES256 and returns the raw 64-byte R‖S signature (RFC 7518 §3.4).
    func sign(_ message: [UInt8]) throws(ProviderKeyError) -> [UInt8] {
        do {
            return Array(try privateKey.signature(for: message).rawRepresentation)
        } catch {
            throw ProviderKeyError(.signingFailed, "ES256 signing failed: \(error)")
        }
    }

    // MARK: Parsing

    private static let ecPublicKey: ASN1ObjectIdentifier = [1, 2, 840, 10045, 2, 1]
    private static let curveNames: [ASN1ObjectIdentifier: String] = [
        [1, 2, 840, 10045, 3, 1, 7]: "P-256",
        [1, 3, 132, 0, 34]: "P-384 (secp384r1)",
        [1, 3, 132, 0, 35]: "P-521 (secp521r1)",
        [1, 3, 132, 0, 10]: "secp256k1",
    ]
    private static let otherAlgorithms: [ASN1ObjectIdentifier: String] = [
        [1, 2, 840, 113549, 1, 1, 1]: "an RSA key",
        [1, 2, 840, 113549, 1, 1, 10]: "an RSA-PSS key",
        [1, 3, 101, 112]: "an Ed25519 key",
        [1, 3, 101, 113]: "an Ed448 key",
        [1, 3, 101, 110]: "an X25519 key",
    ]
    private static let expected = "APNs needs the .p8 auth key from Apple's developer account (PKCS#8 PEM, EC P-256)"

    private static func parseP8(_ pem: String) throws(ProviderKeyError) -> P256.Signing.PrivateKey {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: pem)
        } catch {
            documents = []
        }
        guard !documents.isEmpty else {
            throw ProviderKeyError(.notPEM, "not a PEM file (no '-----BEGIN PRIVATE KEY-----' block); \(expected)")
        }
        guard let document = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
            let found = documents.map(\.discriminator).joined(separator: ", ")
            throw ProviderKeyError(.wrongKeyType, "the file holds \(found), not a private key; \(expected)")
        }
        switch document.discriminator {
        case "PRIVATE KEY":
            break
        case "ENCRYPTED PRIVATE KEY":
            throw ProviderKeyError(.encrypted, "the key is encrypted; Apple's .p8 keys are not. Decrypt it with `openssl pkcs8 -in KEY -out AuthKey.p8 -nocrypt`")
        case "EC PRIVATE KEY":
            throw ProviderKeyError(.notPKCS8, "the key is in SEC1 form ('BEGIN EC PRIVATE KEY'); convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in KEY -out AuthKey.p8`")
        case "RSA PRIVATE KEY":
            throw ProviderKeyError(.wrongKeyType, "the file holds an RSA key; \(expected)")
        default:
            throw ProviderKeyError(.wrongKeyType, "the file holds a '\(document.discriminator)' block; \(expected)")
        }
        let (algorithm, curve) = try algorithmOf(pkcs8: document.derBytes)
        guard algorithm == ecPublicKey else {
            throw ProviderKeyError(.wrongKeyType, "the file holds \(otherAlgorithms[algorithm] ?? "a key of algorithm \(algorithm)"); \(expected)")
        }
        guard curve == [1, 2, 840, 10045, 3, 1, 7] else {
            let name = curve.flatMap { curveNames[$0] } ?? curve.map { "\($0)" } ?? "an unnamed curve"
            throw ProviderKeyError(.wrongCurve, "the key is on curve \(name); ES256 needs P-256 (prime256v1)")
        }
        do {
            return try P256.Signing.PrivateKey(derRepresentation: document.derBytes)
        } catch {
            throw ProviderKeyError(.malformed, "the P-256 key could not be read (\(error)); \(expected)")
        }
    }

    /// Reads the algorithm and curve OIDs of a PKCS#8 `PrivateKeyInfo` (RFC 5208):
    /// `SEQUENCE { version, SEQUENCE { algorithm OID, parameters }, OCTET STRING, … }`.
    private static func algorithmOf(pkcs8 der: [UInt8]) throws(ProviderKeyError) -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?) {
        do {
            let root = try DER.parse(der)
            return try DER.sequence(root, identifier: .sequence) { nodes in
                _ = try Int(derEncoded: &nodes)
                guard let algorithmNode = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "no algorithm") }
                let result = try DER.sequence(algorithmNode, identifier: .sequence) { fields in
                    let algorithm = try ASN1ObjectIdentifier(derEncoded: &fields)
                    let curve = fields.next().flatMap { try? ASN1ObjectIdentifier(derEncoded: $0) }
                    while fields.next() != nil {}
                    return (algorithm, curve)
                }
                // The key itself and any attributes are read by swift-crypto, not here.
                while nodes.next() != nil {}
                return result
            }
        } catch {
            throw ProviderKeyError(.malformed, "the PRIVATE KEY block is not valid PKCS#8; \(expected)")
        }
    }

    private static func checkIdentifier(_ value: String, name: String, code: ProviderKeyError.Code) throws(ProviderKeyError) {
        guard !value.isEmpty else {
            throw ProviderKeyError(code, "\(name) is empty; it is the 10-character identifier shown in Apple's developer account")
        }
        guard value.utf8.count <= 64, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else {
            throw ProviderKeyError(code, "\(name) '\(value)' must be letters and digits, like ABC123DEFG")
        }
    }
}

extension ProviderKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "ProviderKey(keyID: \(keyID), teamID: \(teamID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keyID": keyID, "teamID": teamID]) }
}
