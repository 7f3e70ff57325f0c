import HeraldCore
import HeraldTransport
import _CryptoExtras

/// A Huawei service account, as the JSON key file the API Console ("Credentials → Service account
/// key") writes: whose key signs the JWTs HarmonyOS NEXT's API (v3) takes as its bearer
/// (Huawei's "基于服务账号生成鉴权令牌", https://developer.huawei.com/consumer/cn/doc/harmonyos-guides/push-jwt-token).
///
/// Printing it shows the project, key id and sub-account only, never the private key.
public struct HMSServiceAccount: Sendable {
    /// `project_id`: the `{projectId}` of `/v3/{projectId}/messages:send`.
    public var projectID: String
    /// `key_id`: the JWT header's `kid`.
    public var keyID: String
    /// `sub_account`: the JWT's `iss`.
    public var subAccount: String
    /// `token_uri`, kept as the file has it (Huawei's token endpoint).
    public var tokenURI: String
    /// `private_key`: signs the JWT (PS256).
    let privateKey: _RSA.Signing.PrivateKey

    /// The longest key file read; Huawei's (a 4096-bit key) are about 4 KB.
    public static let maximumFileCount = 64 << 10

    /// An account held in memory; the fields are checked as a key file's are.
    public init(
        projectID: String, keyID: String, subAccount: String, privateKey: _RSA.Signing.PrivateKey, tokenURI: String = HMSAppCredentials.huaweiTokenURI
    ) throws(HMSError) {
        try Self.check("project_id", projectID, allowed: { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
        try Self.check("key_id", keyID, allowed: { $0 > 0x20 && $0 < 0x7F })
        try Self.check("sub_account", subAccount, allowed: { $0 > 0x20 && $0 < 0x7F })
        guard ServiceEndpoint(tokenURI) != nil else {
            throw HMSError(.invalidServiceAccount, "the service account's token_uri must be an https URL; got \(PeerText(tokenURI, limit: 100))")
        }
        guard privateKey.keySizeInBits >= 2048 else { throw HMSError(.invalidServiceAccount, "the service account's private_key is under 2048 bits") }
        self.projectID = projectID
        self.keyID = keyID
        self.subAccount = subAccount
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    /// Reads a key file's JSON. Each missing or unusable field is named.
    public init(json bytes: [UInt8]) throws(HMSError) {
        guard bytes.count <= Self.maximumFileCount else {
            throw HMSError(.invalidServiceAccount, "a service-account file is at most \(Self.maximumFileCount) bytes; this one has \(bytes.count)")
        }
        guard let json = try? JSONValue(parsing: bytes), json.objectValue != nil else {
            throw HMSError(.invalidServiceAccount, "the service-account file is not a JSON object")
        }
        func field(_ name: String) throws(HMSError) -> String {
            guard let value = json[name] else { throw HMSError(.invalidServiceAccount, "the service-account file has no \(name)") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw HMSError(.invalidServiceAccount, "the service-account file's \(name) must be a non-empty string")
            }
            return text
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: try field("private_key"))
        } catch let error as HMSError {
            throw error
        } catch {
            throw HMSError(.invalidServiceAccount, "the service-account file's private_key is not an RSA private key in PEM (-----BEGIN PRIVATE KEY-----)")
        }
        let tokenURI = json["token_uri"]?.stringValue ?? HMSAppCredentials.huaweiTokenURI
        try self.init(projectID: try field("project_id"), keyID: try field("key_id"), subAccount: try field("sub_account"), privateKey: key, tokenURI: tokenURI)
    }

    /// Reads a key file.
    public init(contentsOfFile path: String) throws(HMSError) {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, limit: Self.maximumFileCount)
        } catch {
            throw HMSError(.invalidServiceAccount, "cannot read service-account file '\(path)': \(error.reason)")
        }
        do {
            try self.init(json: bytes)
        } catch {
            throw HMSError(error.code, "service-account file '\(path)': \(error.message)")
        }
    }

    /// The account as a key file's JSON, with the private key as PKCS#8 PEM. A secret: write it
    /// only to files the user asked for (the mock's, for clients to use).
    public var jsonRepresentation: [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writer.beginObject()
        for (key, value) in [
            ("project_id", projectID), ("key_id", keyID), ("private_key", privateKey.pkcs8PEMRepresentation), ("sub_account", subAccount),
            ("token_uri", tokenURI),
        ] {
            writer.key(key)
            writer.string(value)
        }
        writer.endObject()
        return writer.bytes
    }

    /// The public half of the key: what Push Kit verifies the JWTs with.
    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    private static func check(_ name: String, _ value: String, allowed: (UInt8) -> Bool) throws(HMSError) {
        guard !value.isEmpty, value.utf8.count <= 256, value.utf8.allSatisfy(allowed) else {
            throw HMSError(.invalidServiceAccount, "the service account's \(name) is empty, over 256 bytes or has a character it cannot have")
        }
    }
}

extension HMSServiceAccount: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "HMSServiceAccount(project: \(projectID), key: \(keyID), subAccount: \(subAccount))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["projectID": projectID, "keyID": keyID, "subAccount": subAccount, "tokenURI": tokenURI])
    }
}
