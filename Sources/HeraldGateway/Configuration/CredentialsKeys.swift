import Crypto
import HeraldCore

/// The keys that seal, at rest, the apps defined through the admin API (AES-GCM, 256-bit keys,
/// swift-crypto): the current key seals, and it or a previous one opens, so a rotation reads what
/// the old key sealed until everything is sealed again with the new one.
///
/// Read by ``load(file:environment:)`` from `HERALD_CREDENTIALS_KEY` (the base64 of 32 random
/// bytes: `openssl rand -base64 32`) and `HERALD_CREDENTIALS_KEY_PREVIOUS`, or from the file that
/// `credentialsKeyFile` names (the current key on its first line, previous ones on the lines
/// after). A key is never printed, logged or stored: it is known by its ``Key/fingerprint``.
public struct CredentialsKeys: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// One key and its fingerprint.
    public struct Key: Sendable {
        let key: SymmetricKey
        /// What the store keeps beside what this key sealed: a digest, from which the key cannot be
        /// found (16 hex digits of a SHA-256 of the key, domain-separated).
        public let fingerprint: String

        init(_ bytes: [UInt8]) throws(CredentialsKeyError) {
            guard bytes.count == 32 else { throw CredentialsKeyError(.invalidKey, "a credentials key is 32 bytes (openssl rand -base64 32), not \(bytes.count)") }
            key = SymmetricKey(data: bytes)
            var hash = SHA256()
            hash.update(data: Array("herald credentials key\u{0}".utf8))
            hash.update(data: bytes)
            fingerprint = Hex.encode(Array(hash.finalize().prefix(8)))
        }
    }

    /// The key that seals.
    public let current: Key
    /// Keys that still open what they sealed (a rotation's earlier keys), never seal.
    public let previous: [Key]

    /// The environment variables a key is read from.
    public static let environmentVariable = "HERALD_CREDENTIALS_KEY"
    public static let previousEnvironmentVariable = "HERALD_CREDENTIALS_KEY_PREVIOUS"
    /// How to make a key, for messages.
    static let howToMake = "\(environmentVariable) to the base64 of 32 random bytes (openssl rand -base64 32), or credentialsKeyFile in the configuration file"
    /// The format byte that starts each sealed definition: AES-GCM's combined box follows.
    private static let format: UInt8 = 1

    /// Keys from their bytes (32 each).
    public init(current: [UInt8], previous: [[UInt8]] = []) throws(CredentialsKeyError) {
        let key = try Key(current)
        var keys: [Key] = []
        for bytes in previous { keys.append(try Key(bytes)) }
        self.current = key
        self.previous = keys.filter { $0.fingerprint != key.fingerprint }
    }

    /// Keys from their base64 text (padding and surrounding spaces allowed).
    public init(base64 current: String, previous: [String] = []) throws(CredentialsKeyError) {
        func bytes(_ text: String, _ name: String) throws(CredentialsKeyError) -> [UInt8] {
            // The message says what is wrong, never the text.
            guard let bytes = GatewayConfiguration.App.decodeBase64(text) else { throw CredentialsKeyError(.invalidKey, "\(name) is not base64") }
            guard bytes.count == 32 else {
                throw CredentialsKeyError(.invalidKey, "\(name) is \(bytes.count) bytes; a credentials key is 32 (openssl rand -base64 32)")
            }
            return bytes
        }
        var older: [[UInt8]] = []
        for (index, text) in previous.enumerated() { older.append(try bytes(text, "previous key \(index + 1)")) }
        try self.init(current: try bytes(current, "the key"), previous: older)
    }

    /// 32 random bytes: a new key.
    public static func randomKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    /// Seals `plaintext` (an app's definition) with the current key, bound to `app`: a sealed
    /// definition copied to another app's row does not open.
    func seal(_ plaintext: [UInt8], app: String) throws(CredentialsKeyError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(plaintext, using: current.key, authenticating: Self.associatedData(app))
            guard let combined = box.combined else { throw CredentialsKeyError(.cannotSeal, "AES-GCM gave no sealed box") }
            return [Self.format] + Array(combined)
        } catch let error as CredentialsKeyError {
            throw error
        } catch {
            throw CredentialsKeyError(.cannotSeal, "sealing failed (\(type(of: error)))")
        }
    }

    /// Opens what the key with fingerprint `sealedWith` sealed for `app`.
    ///
    /// - Throws: ``CredentialsKeyError`` `unknownKey` when no key of these has that fingerprint,
    ///   `cannotOpen` when it does not open (another key with the same fingerprint, bytes changed).
    func open(_ sealed: [UInt8], sealedWith: String, app: String) throws(CredentialsKeyError) -> [UInt8] {
        guard let key = key(sealedWith) else {
            throw CredentialsKeyError(
                .unknownKey,
                "app \(app) is sealed with key \(sealedWith), which this process does not have (its keys: \(fingerprints)); give it as \(Self.previousEnvironmentVariable) or a later line of credentialsKeyFile"
            )
        }
        guard sealed.first == Self.format else { throw CredentialsKeyError(.cannotOpen, "app \(app)'s definition is not in a sealed form this Herald reads") }
        do {
            let box = try AES.GCM.SealedBox(combined: sealed.dropFirst())
            return Array(try AES.GCM.open(box, using: key.key, authenticating: Self.associatedData(app)))
        } catch {
            throw CredentialsKeyError(.cannotOpen, "app \(app)'s definition does not open with key \(sealedWith): it was changed, or sealed for another app")
        }
    }

    /// The key with this fingerprint, current or previous.
    func key(_ fingerprint: String) -> Key? {
        current.fingerprint == fingerprint ? current : previous.first { $0.fingerprint == fingerprint }
    }

    /// The fingerprints, current first.
    var fingerprints: String { ([current] + previous).map(\.fingerprint).joined(separator: ", ") }

    public var description: String {
        "credentials key \(current.fingerprint)" + (previous.isEmpty ? "" : " (previous: \(previous.map(\.fingerprint).joined(separator: ", ")))")
    }

    public var debugDescription: String { description }

    private static func associatedData(_ app: String) -> [UInt8] { Array("herald app definition\u{0}\(app)".utf8) }
}

extension CredentialsKeys {
    /// The keys the configuration gives: the file `credentialsKeyFile` names (`file`, resolved),
    /// or the environment's `HERALD_CREDENTIALS_KEY` and `HERALD_CREDENTIALS_KEY_PREVIOUS`; `nil`
    /// when neither (the admin API then stores nothing and says how to set one).
    ///
    /// - Throws: ``FieldError`` naming `credentialsKeyFile` or the variable, and what is wrong,
    ///   never a key.
    static func load(file: String?, environment: [String: String]) throws(FieldError) -> CredentialsKeys? {
        let current = environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        let previous = environment[previousEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        if let file {
            guard current == nil, previous == nil else {
                throw FieldError("credentialsKeyFile", "\(environmentVariable) is set too: give the credentials key one way")
            }
            let bytes: [UInt8]
            do {
                bytes = try FileContents.read(file, limit: 64 << 10)
            } catch {
                throw FieldError("credentialsKeyFile", error.reason)
            }
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
            let lines = bytes.split(separator: 0x0A).map { line in
                String(decoding: line.drop(while: isSpace).reversed().drop(while: isSpace).reversed(), as: UTF8.self)
            }.filter { !$0.isEmpty }
            guard let first = lines.first else { throw FieldError("credentialsKeyFile", "'\(file)' holds no key: put the base64 of 32 random bytes on its first line") }
            do {
                return try CredentialsKeys(base64: first, previous: Array(lines.dropFirst()))
            } catch {
                throw FieldError("credentialsKeyFile", "'\(file)': \(error.message)")
            }
        }
        guard let current else {
            if previous != nil { throw FieldError(previousEnvironmentVariable, "is set without \(environmentVariable): the current key seals, a previous one only opens") }
            return nil
        }
        do {
            return try CredentialsKeys(base64: current, previous: previous.map { [$0] } ?? [])
        } catch {
            throw FieldError(error.message.hasPrefix("previous") ? previousEnvironmentVariable : environmentVariable, error.message)
        }
    }
}

/// Lower-case hex, for fingerprints.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
