// The one file that uses swift-certificates' CMS support (and its fixed-time validation), which
// are SPI: the dependency is pinned to a minor version in Package.swift.
import Crypto
import HeraldIdentity
@_spi(CMS) @_spi(FixedExpiryValidationTime) import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The digest of a bundle signature.
public enum SignatureDigest: String, Sendable, Hashable, CaseIterable {
    /// SHA-256, the default.
    case sha256
    /// SHA-1, as older tools sign; RSA keys only.
    case sha1
}

/// Detached CMS SignedData over a manifest (apns-spec §5.4, §6.5): DER, with the signed
/// attributes content-type, message-digest and signing-time, and the signer certificate and the
/// WWDR intermediate included.
enum BundleSigner {
    static func sign(
        manifest: [UInt8], identity: CertificateIdentity, intermediates: [Certificate], digest: SignatureDigest, signingTime: Date
    ) throws(BundleError) -> [UInt8] {
        let algorithm: Certificate.SignatureAlgorithm
        switch (digest, identity.privateKey.supportedSignatureAlgorithms.contains(.sha256WithRSAEncryption)) {
        case (.sha256, true): algorithm = .sha256WithRSAEncryption
        case (.sha1, true): algorithm = .sha1WithRSAEncryption
        case (.sha256, false): algorithm = .ecdsaWithSHA256
        case (.sha1, false):
            throw BundleError(.signingFailed, "SHA-1 signatures need an RSA key; this certificate's key is EC (use SHA-256)")
        }
        do {
            return try CMS.sign(
                manifest, signatureAlgorithm: algorithm, additionalIntermediateCertificates: intermediates,
                certificate: identity.certificate, privateKey: identity.privateKey, signingTime: signingTime, detached: true
            )
        } catch {
            throw BundleError(.signingFailed, "the manifest could not be signed: \(error)")
        }
    }

    /// Whether `signature` verifies over `manifest` and chains from its signer to one of `roots`.
    /// Returns `nil` when it does, else what is wrong.
    static func verify(manifest: [UInt8], signature: [UInt8], roots: [Certificate], at time: Date) async -> String? {
        let result = await CMS.isValidSignature(
            dataBytes: manifest, signatureBytes: signature, trustRoots: CertificateStore(roots)
        ) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        switch result {
        case .success:
            return nil
        case .failure(let failure):
            return Self.describe(failure)
        }
    }

    private static func describe(_ failure: CMS.VerificationError) -> String {
        switch failure {
        case .unableToValidateSigner(let details):
            return "the signer's certificate does not chain to a trusted root (\(details.policyFailures.map { "\($0)" }.joined(separator: "; ")))"
        case .invalidCMSBlock(let details):
            return "the signature does not verify over this manifest: \(details.reason)"
        }
    }
}
