import Crypto
import HeraldCore

/// A key that may call the API for some apps, or an admin key. Only its SHA-256 is kept: the key
/// itself is shown once, by ``generate(name:apps:)`` (`herald api-key`).
public struct APIKey: Sendable, Hashable {
    /// Who holds it (for logs and metrics; never the key).
    public var name: String
    /// SHA-256 of the key's UTF-8 bytes.
    public var sha256: [UInt8]
    /// The apps it may use.
    public var apps: Set<String>
    /// An admin key (`"admin": true` in the file): it may use the admin routes (`/v1/admin/…`:
    /// apps and their keys defined through the API), which no app key may, and no app's routes.
    public var isAdmin = false

    public init(name: String, sha256: [UInt8], apps: Set<String>) {
        self.name = name
        self.sha256 = sha256
        self.apps = apps
    }

    /// An admin key (``isAdmin``): it uses no app.
    public static func admin(name: String, sha256: [UInt8]) -> APIKey {
        var key = APIKey(name: name, sha256: sha256, apps: [])
        key.isAdmin = true
        return key
    }

    /// A key's digest, as stored.
    public static func digest(of key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(key.utf8)))
    }

    /// A fresh key (`hk_` and 43 base64url characters: 256 random bits) and its entry.
    public static func generate(name: String, apps: Set<String>) -> (key: String, entry: APIKey) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let key = "hk_" + Base64URL.encode(bytes)
        return (key, APIKey(name: name, sha256: digest(of: key), apps: apps))
    }

    /// A fresh admin key and its entry.
    public static func generateAdmin(name: String) -> (key: String, entry: APIKey) {
        let (key, entry) = generate(name: name, apps: [])
        return (key, admin(name: name, sha256: entry.sha256))
    }

    /// The digest as lower-case hex, as the configuration file holds it.
    public var sha256Hex: String {
        sha256.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    /// The `apiKeys` entry for the configuration file.
    public var configurationEntry: JSONValue {
        if isAdmin { return .object(["name": .string(name), "sha256": .string(sha256Hex), "admin": .bool(true)]) }
        return .object(["name": .string(name), "sha256": .string(sha256Hex), "apps": .array(apps.sorted().map(JSONValue.string))])
    }
}

/// The API keys of a gateway, looked up by the digest of what a request presents.
struct APIKeyring: Sendable {
    private let keys: [[UInt8]: APIKey]

    init(_ keys: [APIKey]) {
        self.keys = Dictionary(keys.map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The key whose digest matches `presented`'s. Comparing digests, not keys, leaks nothing
    /// about a key through timing: an attacker controls the input, not its hash.
    func key(for presented: String) -> APIKey? {
        keys[APIKey.digest(of: presented)]
    }
}
