import Foundation

/// A scratch directory for a test's files, removed when the value is deinitialised.
public final class ScratchDirectory {
    public let path: String

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` (making its subdirectories) and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let full = file(name)
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        return full
    }

    /// Writes `text` to `name` and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try write(name, Array(text.utf8))
    }

    /// A `.p12` of a PEM certificate and key, made by openssl (which `.ci/run` installs): the legacy
    /// RC2-40/3DES encryption of older exports, or OpenSSL 3's AES-256-CBC with PBKDF2.
    public func p12(certificatePEM: String, keyPEM: String, legacy: Bool, password: String, name: String) async throws -> String {
        let certificate = try write("\(name).crt.pem", certificatePEM)
        let key = try write("\(name).key.pem", keyPEM)
        let output = file("\(name).p12")
        try await runCommand("openssl", ["pkcs12", "-export"] + (legacy ? ["-legacy"] : []) + ["-in", certificate, "-inkey", key, "-passout", "pass:\(password)", "-out", output])
        return output
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
