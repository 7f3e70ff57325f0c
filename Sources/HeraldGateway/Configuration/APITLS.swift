import NIOConcurrencyHelpers
import NIOSSL

/// The certificate and key the API's listener terminates TLS with, read from PEM files and read
/// again on ``reload()`` (`herald serve` calls it on SIGHUP): a renewed certificate is used for
/// every handshake after the reload, with no restart and no connection dropped.
public final class APITLSIdentity: Sendable {
    /// Where the PEM files are.
    public struct Files: Sendable, Hashable {
        /// The certificate chain, leaf first.
        public var certificateFile: String
        /// The private key (unencrypted PEM).
        public var keyFile: String

        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// Why the files could not be used; the files are named, their contents never.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let files: Files
    private let current: NIOLockedValueBox<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

    /// Reads the files now: a gateway with a bad certificate is refused at start.
    public init(files: Files) throws(LoadError) {
        self.files = files
        current = NIOLockedValueBox(try Self.load(files))
    }

    /// Reads the files again. On an error the previous certificate stays in use.
    public func reload() throws(LoadError) {
        let loaded = try Self.load(files)
        current.withLockedValue { $0 = loaded }
    }

    /// A server configuration that asks for the current certificate at every handshake.
    var serverConfiguration: TLSConfiguration {
        let (chain, key) = current.withLockedValue { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.sslContextCallback = { [current] _, promise in
            let (chain, key) = current.withLockedValue { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
            promise.succeed(override)
        }
        return configuration
    }

    private static func load(_ files: Files) throws(LoadError) -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateFile)
        } catch {
            throw LoadError(description: "tls.certificateFile \(files.certificateFile): not a readable PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else { throw LoadError(description: "tls.certificateFile \(files.certificateFile): holds no certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.keyFile, format: .pem)
        } catch {
            throw LoadError(description: "tls.keyFile \(files.keyFile): not a readable, unencrypted PEM private key")
        }
        return (chain, key)
    }
}
