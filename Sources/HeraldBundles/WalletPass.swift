import HeraldCore
import HeraldIdentity
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Wallet pass before signing: `pass.json`, its images and `xx.lproj/` folders (apns-spec §6).
public struct WalletPass: Sendable {
    /// The pass's files, `pass.json` included.
    public private(set) var files: [BundleFile]

    /// The five pass styles; a pass has exactly one (§6.3).
    public static let styles = ["boardingPass", "coupon", "eventTicket", "generic", "storeCard"]
    /// The transit types a boarding pass can have (§6.3).
    public static let transitTypes = ["PKTransitTypeAir", "PKTransitTypeBoat", "PKTransitTypeBus", "PKTransitTypeGeneric", "PKTransitTypeTrain"]

    /// A pass from a directory. Files never come from outside it (no `..`, no symbolic links out).
    public init(directory: String) throws(BundleError) {
        files = try BundleDirectory.read(directory)
        try checkNoSignatureFiles()
    }

    /// A pass from memory: `pass.json` as a value, and the other files (`icon.png` at least).
    public init(pass: JSONValue, files: [BundleFile]) throws(BundleError) {
        self.files = [BundleFile(unchecked: "pass.json", contents: Array(pass.jsonString.utf8))] + files.filter { $0.path != "pass.json" }
        try checkNoSignatureFiles()
    }

    /// `pass.json`, parsed.
    public func passJSON() throws(BundleError) -> [String: JSONValue] {
        guard let file = files[path: "pass.json"] else {
            throw BundleError(.missingFile, "pass.json is missing: every pass has one at its top level")
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: file.contents)
        } catch {
            throw BundleError(.invalidJSON, "pass.json: \(error)")
        }
        guard case .object(let members) = value else { throw BundleError(.invalidJSON, "pass.json must be a JSON object") }
        return members
    }

    /// Checks `pass.json` and the files as Wallet would (§6.1-§6.3): the six required keys,
    /// exactly one style (with `transitType` for a boarding pass), an `authenticationToken` of
    /// 16 characters or more when there is a `webServiceURL`, and `icon.png`.
    public func validate() throws(BundleError) {
        let pass = try passJSON()
        guard pass["formatVersion"] == .int(1) else {
            throw BundleError(pass["formatVersion"] == nil ? .missingKey : .invalidValue, "pass.json: formatVersion must be the number 1")
        }
        for key in ["passTypeIdentifier", "serialNumber", "teamIdentifier", "organizationName", "description"] {
            guard let value = pass[key] else { throw BundleError(.missingKey, "pass.json: key '\(key)' is missing") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw BundleError(.invalidValue, "pass.json: '\(key)' must be a non-empty string")
            }
        }
        guard pass["passTypeIdentifier"]?.stringValue?.hasPrefix("pass.") == true else {
            throw BundleError(.invalidValue, "pass.json: passTypeIdentifier must start with 'pass.'")
        }
        let styles = Self.styles.filter { pass[$0] != nil }
        guard styles.count == 1 else {
            throw BundleError(
                styles.isEmpty ? .missingKey : .invalidValue,
                styles.isEmpty
                    ? "pass.json: a pass needs one style key: \(Self.styles.joined(separator: ", "))"
                    : "pass.json: a pass has exactly one style key, found \(styles.joined(separator: " and "))"
            )
        }
        guard pass[styles[0]]?.objectValue != nil else {
            throw BundleError(.invalidValue, "pass.json: '\(styles[0])' must be a dictionary of fields")
        }
        if styles[0] == "boardingPass" {
            guard let transit = pass["boardingPass"]?["transitType"]?.stringValue else {
                throw BundleError(.missingKey, "pass.json: boardingPass needs 'transitType' (\(Self.transitTypes.joined(separator: ", ")))")
            }
            guard Self.transitTypes.contains(transit) else {
                throw BundleError(.invalidValue, "pass.json: boardingPass.transitType '\(transit)' is not one of \(Self.transitTypes.joined(separator: ", "))")
            }
        }
        if pass["webServiceURL"] != nil {
            guard let token = pass["authenticationToken"]?.stringValue else {
                throw BundleError(.missingKey, "pass.json: 'authenticationToken' is needed with webServiceURL")
            }
            guard token.count >= 16 else {
                throw BundleError(.invalidValue, "pass.json: authenticationToken must be at least 16 characters, got \(token.count)")
            }
        }
        guard files[path: "icon.png"] != nil else {
            throw BundleError(.missingFile, "icon.png is missing: every pass needs one at its top level")
        }
    }

    /// Validates, checks the certificate against the pass, and signs (§6.4, §6.5): SHA-1
    /// `manifest.json`, a detached CMS signature with the WWDR intermediate included.
    public func sign(
        identity: CertificateIdentity, wwdr: [Certificate], digest: SignatureDigest = .sha256, signingTime: Date = Date()
    ) throws(BundleError) -> SignedBundle {
        try validate()
        let pass = try passJSON()
        let requirements = SigningRequirements(
            prefix: "pass.", kind: "a Pass Type ID certificate", identifier: pass["passTypeIdentifier"]?.stringValue ?? "",
            identifierKey: "passTypeIdentifier", file: "pass.json", teamID: pass["teamIdentifier"]?.stringValue
        )
        let warnings = try requirements.check(identity, intermediates: wwdr, at: signingTime)
        let manifest = ManifestFormat.sha1.manifest(for: files)
        let signature = try BundleSigner.sign(manifest: manifest, identity: identity, intermediates: wwdr, digest: digest, signingTime: signingTime)
        return SignedBundle(files: files, manifest: manifest, signature: signature, warnings: warnings, mimeType: BundleMIMEType.pass, signingTime: signingTime)
    }

    private func checkNoSignatureFiles() throws(BundleError) {
        for name in ["manifest.json", "signature"] where files[path: name] != nil {
            throw BundleError(.unexpectedFile, "\(name) is made when signing; remove it from the pass's files")
        }
    }
}

/// A `.pkpasses` bundle: several signed passes in one download, at most 10 (§6.6).
public struct PassesBundle: Sendable {
    public static let maximumPasses = 10

    public let passes: [SignedBundle]

    public init(passes: [SignedBundle]) throws(BundleError) {
        guard !passes.isEmpty, passes.count <= Self.maximumPasses else {
            throw BundleError(.tooManyPasses, "a .pkpasses bundle holds 1 to \(Self.maximumPasses) passes, got \(passes.count)")
        }
        guard passes.allSatisfy({ $0.mimeType == BundleMIMEType.pass }) else {
            throw BundleError(.invalidValue, "a .pkpasses bundle holds only passes")
        }
        self.passes = passes
    }

    /// The zip of `pass1.pkpass` … `passN.pkpass`.
    public func zipData() throws(BundleError) -> [UInt8] {
        var files: [BundleFile] = []
        for (index, pass) in passes.enumerated() {
            files.append(BundleFile(unchecked: "pass\(index + 1).pkpass", contents: try pass.zipData()))
        }
        return try ZipWriter.zip(files, modificationDate: passes.map(\.signingTime).max() ?? Date())
    }

    public static let mimeType = BundleMIMEType.passes
}
