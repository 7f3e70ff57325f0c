import HeraldCore
import SwiftASN1
import X509

/// Certificates on their own, without a key: Apple's WWDR intermediate, a root to verify against.
public enum CertificateFile {
    /// The certificates in a PEM file (every `CERTIFICATE` block) or a DER file (one certificate).
    public static func load(_ path: String) throws(IdentityError) -> [Certificate] {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, limit: 1 << 20)
        } catch {
            throw IdentityError(.unreadableFile, "cannot read certificate file '\(path)': \(error.reason)")
        }
        return try parse(bytes, source: "'\(path)'")
    }

    /// The certificates in PEM or DER bytes.
    public static func parse(_ bytes: [UInt8], source: String = "the certificate") throws(IdentityError) -> [Certificate] {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN") {
            let blocks = ((try? PEMDocument.parseMultiple(pemString: text)) ?? []).filter { $0.discriminator == "CERTIFICATE" }
            let certificates = blocks.compactMap { try? Certificate(derEncoded: $0.derBytes) }
            guard !certificates.isEmpty, certificates.count == blocks.count else {
                throw IdentityError(.noCertificate, "\(source) holds no readable '-----BEGIN CERTIFICATE-----' block")
            }
            return certificates
        }
        do {
            return [try Certificate(derEncoded: bytes)]
        } catch {
            throw IdentityError(.malformed, "\(source) is neither a PEM nor a DER certificate")
        }
    }
}
