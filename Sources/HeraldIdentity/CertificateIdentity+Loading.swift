import HeraldCore
import NIOSSL
import SwiftASN1

extension CertificateIdentity {
    /// Loads a `.p12` (PKCS#12). Both the legacy encryption of macOS Keychain exports (RC2-40 and
    /// 3DES with a SHA-1 MAC) and OpenSSL 3's AES-256/PBKDF2 load (apns-spec §7.1). An empty or absent
    /// password is tried as such.
    public init(pkcs12 bytes: [UInt8], password: String?, source: String = "the .p12") throws(IdentityError) {
        guard !bytes.isEmpty else { throw IdentityError(.malformed, "\(source) is empty") }
        var lastError: (any Error)?
        // nil and "" are different to BoringSSL: try what was given, and for no password both forms.
        let attempts: [[UInt8]?] = password.map { [Array($0.utf8)] } ?? [nil, []]
        for attempt in attempts {
            do {
                let bundle = try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: attempt)
                try self.init(certificates: bundle.certificateChain, key: bundle.privateKey, source: source)
                return
            } catch let error as IdentityError {
                throw error
            } catch {
                lastError = error
            }
        }
        let text = "\(lastError.map { "\($0)" } ?? "")"
        if text.contains("INCORRECT_PASSWORD") || text.contains("BAD_DECRYPT") || text.contains("MAC_VERIFY") {
            throw IdentityError(
                .wrongPassword,
                password == nil
                    ? "\(source) is protected by a password; give it with --cert-password or HERALD_CERT_PASSWORD"
                    : "\(source): wrong password"
            )
        }
        // BoringSSL often has nothing to add ("unknownError([])"); say what the file is not.
        let why = text.isEmpty || text.contains("unknownError([])") ? "" : " (\(text))"
        throw IdentityError(.malformed, "\(source) is neither a PKCS#12 (.p12) file nor PEM\(why)")
    }

    /// Loads a certificate and its private key from PEM text. The key may be RSA (PKCS#1 or PKCS#8)
    /// or EC (SEC1 or PKCS#8); further certificates after the first are kept as the chain.
    public init(certificatePEM: String, keyPEM: String, source: String = "the certificate") throws(IdentityError) {
        // Certificate and key may share one file: pick the blocks by their labels.
        let certificateBlocks = (try? PEMDocument.parseMultiple(pemString: certificatePEM)) ?? []
        let certificates = certificateBlocks.filter { $0.discriminator == "CERTIFICATE" }.compactMap {
            try? NIOSSLCertificate(bytes: $0.derBytes, format: .der)
        }
        guard !certificates.isEmpty else {
            throw IdentityError(.noCertificate, "\(source) holds no readable '-----BEGIN CERTIFICATE-----' block")
        }
        let keyBlocks = (try? PEMDocument.parseMultiple(pemString: keyPEM)) ?? []
        if keyBlocks.contains(where: { $0.discriminator == "ENCRYPTED PRIVATE KEY" }) {
            throw IdentityError(.malformed, "\(source): the private key is encrypted; decrypt it with `openssl pkey -in KEY -out key.pem`")
        }
        guard let keyBlock = keyBlocks.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
            throw IdentityError(.noPrivateKey, "\(source): no PEM private key found; give the key file with --cert-key")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(keyBlock.pemString.utf8), format: .pem)
        } catch {
            throw IdentityError(.malformed, "\(source): the private key could not be read (\(error))")
        }
        try self.init(certificates: certificates, key: key, source: source)
    }

    /// Loads from files: a `.p12`, or a PEM certificate with its key in `keyFile` (or in the same
    /// file when `keyFile` is `nil`). The format is recognised from the content, not the name.
    public init(file: String, keyFile: String? = nil, password: String? = nil) throws(IdentityError) {
        let bytes = try Self.read(file, what: "certificate file")
        let looksLikePEM = bytes.starts(with: Array("-----BEGIN".utf8)) || String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN")
        if !looksLikePEM {
            guard keyFile == nil else {
                throw IdentityError(.malformed, "'\(file)' is not PEM, so it is read as a .p12, which holds its own key: drop --cert-key")
            }
            try self.init(pkcs12: bytes, password: password, source: "'\(file)'")
            return
        }
        let certificateText = String(decoding: bytes, as: UTF8.self)
        var keyText = certificateText
        if let keyFile { keyText = String(decoding: try Self.read(keyFile, what: "key file"), as: UTF8.self) }
        let source = keyFile.map { "'\(file)' with key '\($0)'" } ?? "'\(file)'"
        try self.init(certificatePEM: certificateText, keyPEM: keyText, source: source)
    }

    private static func read(_ path: String, what: String) throws(IdentityError) -> [UInt8] {
        do {
            return try FileContents.read(path, limit: 1 << 20)
        } catch {
            throw IdentityError(.unreadableFile, "cannot read \(what) '\(path)': \(error.reason)")
        }
    }
}
