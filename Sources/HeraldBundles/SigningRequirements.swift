import HeraldIdentity
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a certificate must be to sign a bundle (apns-spec §7.2): a Pass Type ID certificate
/// (`pass.…` in its subject UID) or a Website Push ID certificate (`web.…`), for the bundle's own
/// identifier and team, valid now, issued by the WWDR intermediate that comes with it.
struct SigningRequirements {
    var prefix: String
    var kind: String
    var identifier: String
    var identifierKey: String
    var file: String
    var teamID: String?

    /// Throws what disqualifies the identity; returns warnings (expiry within 30 days).
    func check(_ identity: CertificateIdentity, intermediates: [Certificate], at now: Date) throws(BundleError) -> [String] {
        var warnings: [String] = []
        do {
            if let warning = try identity.checkValidity(at: now) { warnings.append(warning) }
        } catch {
            throw BundleError(.identity, error.message)
        }
        guard let uid = identity.subjectUID else {
            throw BundleError(.identity, "the certificate has no UID in its subject; \(kind) has its identifier there")
        }
        guard uid.hasPrefix(prefix) else {
            throw BundleError(.identity, "certificate '\(uid)' is not \(kind) (its UID must start with '\(prefix)')")
        }
        guard uid == identifier else {
            throw BundleError(.identity, "\(file): \(identifierKey) '\(identifier)' does not match the certificate's '\(uid)'")
        }
        if let teamID, let certificateTeam = identity.organizationalUnit, certificateTeam != teamID {
            throw BundleError(.identity, "\(file): teamIdentifier '\(teamID)' does not match the certificate's team '\(certificateTeam)'")
        }
        guard !intermediates.isEmpty else {
            throw BundleError(.identity, "the Apple WWDR intermediate certificate is needed (--wwdr): Wallet and Safari reject signatures without it")
        }
        // The intermediate must really have signed the certificate, not just bear its issuer's name.
        let certificate = identity.certificate
        if !intermediates.contains(where: { $0.subject == certificate.issuer && $0.publicKey.isValidSignature(certificate.signature, for: certificate) }) {
            throw BundleError(
                .identity,
                "the WWDR certificate given did not issue '\(uid)' (its issuer is '\(identity.certificate.issuer)'); use the one that did (G4 for certificates issued after January 2022)"
            )
        }
        return warnings
    }
}
