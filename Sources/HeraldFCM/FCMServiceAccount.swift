import HeraldCore
import HeraldTransport
import _CryptoExtras

/// A Google service account, as the JSON key file the Firebase console ("Project settings →
/// Service accounts → Generate new private key") or `gcloud iam service-accounts keys create`
/// writes: whose key signs the OAuth assertion exchanged for FCM's access tokens.
///
/// Printing it shows the project, key id and client email only, never the private key.
public struct FCMServiceAccount: Sendable {
    /// `project_id`: the Firebase project messages are sent for (`/v1/projects/{project_id}/…`).
    public var projectID: String
    /// `private_key_id`: the assertion's `kid`.
    public var privateKeyID: String
    /// `client_email`: the assertion's `iss`.
    public var clientEmail: String
    /// `token_uri`: where the assertion is exchanged for an access token, and its `aud`.
    public var tokenURI: String
    /// `private_key`: signs the assertion (RS256).
    let privateKey: _RSA.Signing.PrivateKey

    /// The longest service-account file read; Google's are about 2.4 KB.
    public static let maximumFileCount = 64 << 10
    /// Google's token endpoint, the `token_uri` of every key file it writes.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// An account held in memory; the fields are checked as a key file's are.
    public init(projectID: String, privateKeyID: String, privateKey: _RSA.Signing.PrivateKey, clientEmail: String, tokenURI: String = Self.googleTokenURI)
        throws(FCMError)
    {
        try Self.check("project_id", projectID, allowed: { Self.isProjectCharacter($0) })
        try Self.check("private_key_id", privateKeyID, allowed: { $0 > 0x20 && $0 < 0x7F })
        try Self.check("client_email", clientEmail, allowed: { $0 > 0x20 && $0 < 0x7F })
        guard clientEmail.contains("@") else { throw FCMError(.invalidServiceAccount, "the service account's client_email is not an email address") }
        guard ServiceEndpoint(tokenURI) != nil else {
            throw FCMError(
                .invalidServiceAccount, "the service account's token_uri must be an https URL (http only to a loopback address); got \(PeerText(tokenURI, limit: 100))")
        }
        guard privateKey.keySizeInBits >= 2048 else { throw FCMError(.invalidServiceAccount, "the service account's private_key is under 2048 bits") }
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    /// Reads a service-account key file's JSON. Each missing or unusable field is named.
    public init(json bytes: [UInt8]) throws(FCMError) {
        guard bytes.count <= Self.maximumFileCount else {
            throw FCMError(.invalidServiceAccount, "a service-account file is at most \(Self.maximumFileCount) bytes; this one has \(bytes.count)")
        }
        guard let json = try? JSONValue(parsing: bytes), json.objectValue != nil else {
            throw FCMError(.invalidServiceAccount, "the service-account file is not a JSON object")
        }
        func field(_ name: String) throws(FCMError) -> String {
            guard let value = json[name] else { throw FCMError(.invalidServiceAccount, "the service-account file has no \(name)") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw FCMError(.invalidServiceAccount, "the service-account file's \(name) must be a non-empty string")
            }
            return text
        }
        let type = try field("type")
        guard type == "service_account" else {
            throw FCMError(
                .invalidServiceAccount, "the service-account file's type must be \"service_account\"; got \"\(PeerText(type, limit: 40))\" (an OAuth client or user credential cannot send)")
        }
        let pem = try field("private_key")
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw FCMError(
                .invalidServiceAccount, "the service-account file's private_key is not an RSA private key of 2048 bits or more in PEM (-----BEGIN PRIVATE KEY-----)")
        }
        try self.init(
            projectID: try field("project_id"), privateKeyID: try field("private_key_id"), privateKey: key, clientEmail: try field("client_email"),
            tokenURI: try field("token_uri"))
    }

    /// Reads a service-account key file.
    public init(contentsOfFile path: String) throws(FCMError) {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, limit: Self.maximumFileCount)
        } catch {
            throw FCMError(.invalidServiceAccount, "cannot read service-account file '\(path)': \(error.reason)")
        }
        do {
            try self.init(json: bytes)
        } catch {
            throw FCMError(error.code, "service-account file '\(path)': \(error.message)")
        }
    }

    /// The account as a key file's JSON, with the private key as PKCS#8 PEM. A secret: write it
    /// only to files the user asked for (the mock's, for clients to use).
    public var jsonRepresentation: [UInt8] {
        var writer = JSONWriter(capacity: 2048)
        writer.beginObject()
        for (key, value) in [
            ("type", "service_account"), ("project_id", projectID), ("private_key_id", privateKeyID), ("private_key", privateKey.pkcs8PEMRepresentation),
            ("client_email", clientEmail), ("client_id", ""), ("token_uri", tokenURI),
        ] {
            writer.key(key)
            writer.string(value)
        }
        writer.endObject()
        return writer.bytes
    }

    /// The public half of the key: what the token endpoint verifies assertions with.
    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    /// Google's project ids: lowercase letters, digits and hyphens (Firebase allows no others).
    private static func isProjectCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): true
        default: false
        }
    }

    private static func check(_ name: String, _ value: String, allowed: (UInt8) -> Bool) throws(FCMError) {
        guard !value.isEmpty, value.utf8.count <= 256, value.utf8.allSatisfy(allowed) else {
            throw FCMError(.invalidServiceAccount, "the service account's \(name) is empty, over 256 bytes or has a character it cannot have")
        }
    }
}

extension FCMServiceAccount: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "FCMServiceAccount(project: \(projectID), key: \(privateKeyID), email: \(clientEmail))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["projectID": projectID, "privateKeyID": privateKeyID, "clientEmail": clientEmail, "tokenURI": tokenURI])
    }
}
