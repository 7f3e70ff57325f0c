import HeraldCore
import HeraldIdentity
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What checking a signed pass or push package found.
public struct BundleVerification: Sendable {
    public enum Kind: String, Sendable { case pass, pushPackage, unknown }

    public var kind: Kind = .unknown
    /// Everything wrong, in words; empty when the bundle is good.
    public var problems: [String] = []
    /// The signer certificate's subject identifier (UID), when the signature names one.
    public var signer: String?
    /// The signing-time attribute.
    public var signingTime: Date?
    /// The subjects of the certificates in the signature (signer and intermediates).
    public var certificates: [String] = []
    /// Files checked against the manifest.
    public var filesChecked = 0
    /// Whether the signature was checked up to a root given by the caller (otherwise up to the
    /// intermediate it carries).
    public var chainChecked = false

    public var isValid: Bool { problems.isEmpty }
}

/// Checks a signed `.pkpass` or push package zip: every manifest digest matches, no file is
/// missing or extra, and the signature verifies over the manifest and chains to a root.
public enum BundleVerifier {
    /// - Parameters:
    ///   - roots: trusted roots (Apple's root CA for real bundles). With none, the signature is
    ///     checked up to the intermediate it carries, and ``BundleVerification/chainChecked`` is false.
    ///   - time: when certificates must be valid; by default the signing time, else now.
    public static func verify(zip: [UInt8], roots: [Certificate] = [], at time: Date? = nil) async -> BundleVerification {
        var report = BundleVerification()
        let files: [BundleFile]
        do {
            files = try ZipWriter.unzip(zip)
        } catch {
            report.problems.append(error.message)
            return report
        }
        report.kind = files[path: "pass.json"] != nil ? .pass : files[path: "website.json"] != nil ? .pushPackage : .unknown
        if report.kind == .unknown { report.problems.append("neither pass.json nor website.json: not a pass or push package") }

        guard let manifestFile = files[path: "manifest.json"] else {
            report.problems.append("manifest.json is missing")
            return report
        }
        checkManifest(manifestFile.contents, files: files, kind: report.kind, into: &report)

        guard let signature = files[path: "signature"] else {
            report.problems.append("signature is missing")
            return report
        }
        guard let contents = SignatureContents(signature.contents) else {
            report.problems.append("signature is not a CMS SignedData structure")
            return report
        }
        report.certificates = contents.certificates.map { $0.apnsSubjectUID ?? "\($0.subject)" }
        report.signingTime = contents.signingTime
        if contents.signingTime == nil { report.problems.append("the signature has no signing-time attribute (Wallet requires one)") }
        if !contents.isDetached { report.problems.append("the signature embeds its content; it must be detached") }
        let signer = contents.certificates.first { !$0.isCertificateAuthority }
        report.signer = signer.map { $0.apnsSubjectUID ?? "\($0.subject)" }

        var anchors = roots
        if anchors.isEmpty {
            anchors = contents.certificates.filter(\.isCertificateAuthority)
            if anchors.isEmpty, let signer { anchors = [signer] }
        } else {
            report.chainChecked = true
        }
        if let problem = await BundleSigner.verify(
            manifest: manifestFile.contents, signature: signature.contents, roots: anchors, at: time ?? contents.signingTime ?? Date()
        ) {
            report.problems.append(problem)
        }
        return report
    }

    private static func checkManifest(_ manifestBytes: [UInt8], files: [BundleFile], kind: BundleVerification.Kind, into report: inout BundleVerification) {
        guard case .object(let manifest) = (try? JSONValue(parsing: manifestBytes)) ?? .null else {
            report.problems.append("manifest.json is not a JSON object")
            return
        }
        let content = files.filter { $0.path != "manifest.json" && $0.path != "signature" }
        for file in content.sorted(by: { $0.path < $1.path }) {
            guard let entry = manifest[file.path] else {
                report.problems.append("\(file.path) is in the bundle but not in the manifest")
                continue
            }
            let (hashType, expected): (String, String?) = switch entry {
            case .string(let hex): ("sha1", hex)
            case .object(let fields): (fields["hashType"]?.stringValue ?? "", fields["hashValue"]?.stringValue)
            default: ("", nil)
            }
            guard let expected, let actual = ManifestFormat.sha1.digest(of: file.contents, hashType: hashType) else {
                report.problems.append("manifest.json: the entry for \(file.path) is not a digest Herald knows")
                continue
            }
            if kind == .pass && hashType != "sha1" {
                report.problems.append("manifest.json: \(file.path) uses \(hashType); passes use SHA-1")
            }
            report.filesChecked += 1
            if actual != expected.lowercased() {
                report.problems.append("\(file.path) was changed: its \(hashType) is \(actual), the manifest says \(expected)")
            }
        }
        for path in manifest.keys.sorted() where !content.contains(where: { $0.path == path }) {
            report.problems.append("\(path) is in the manifest but missing from the bundle")
        }
    }
}

extension Certificate {
    var isCertificateAuthority: Bool {
        if case .isCertificateAuthority = (try? extensions.basicConstraints) ?? .notCertificateAuthority { return true }
        return false
    }
}
