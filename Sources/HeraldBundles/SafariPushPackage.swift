import HeraldCore
import HeraldIdentity
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Safari website push package before signing: `website.json` and `icon.iconset/` (apns-spec §5).
public struct SafariPushPackage: Sendable {
    public private(set) var files: [BundleFile]

    /// The six icons and their pixel sizes (§5.1).
    public static let icons: [(name: String, pixels: Int)] = [
        ("icon_16x16.png", 16), ("icon_16x16@2x.png", 32), ("icon_32x32.png", 32),
        ("icon_32x32@2x.png", 64), ("icon_128x128.png", 128), ("icon_128x128@2x.png", 256),
    ]

    /// A package from a directory holding `website.json` and `icon.iconset/`.
    public init(directory: String) throws(BundleError) {
        files = try BundleDirectory.read(directory)
        for name in ["manifest.json", "signature"] where files[path: name] != nil {
            throw BundleError(.unexpectedFile, "\(name) is made when signing; remove it from the package's files")
        }
    }

    /// A package from memory: `website.json` as a value, and the icons by file name.
    public init(website: JSONValue, icons: [String: [UInt8]]) throws(BundleError) {
        var files = [BundleFile(unchecked: "website.json", contents: Array(website.jsonString.utf8))]
        for (name, contents) in icons.sorted(by: { $0.key < $1.key }) {
            files.append(try BundleFile(path: "icon.iconset/" + name, contents: contents))
        }
        self.files = files
    }

    /// `website.json`, parsed.
    public func websiteJSON() throws(BundleError) -> [String: JSONValue] {
        guard let file = files[path: "website.json"] else {
            throw BundleError(.missingFile, "website.json is missing: a push package has one at its top level")
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: file.contents)
        } catch {
            throw BundleError(.invalidJSON, "website.json: \(error)")
        }
        guard case .object(let members) = value else { throw BundleError(.invalidJSON, "website.json must be a JSON object") }
        return members
    }

    /// Checks as Safari would (§5.1, §5.2): the six keys of `website.json` and their rules, and
    /// exactly the six iconset PNGs at their pixel sizes.
    public func validate() throws(BundleError) {
        let website = try websiteJSON()
        for key in ["websiteName", "websitePushID", "allowedDomains", "urlFormatString", "authenticationToken", "webServiceURL"] where website[key] == nil {
            throw BundleError(.missingKey, "website.json: key '\(key)' is missing")
        }
        guard let pushID = website["websitePushID"]?.stringValue, pushID.hasPrefix("web."), pushID.count > 4 else {
            throw BundleError(.invalidValue, "website.json: websitePushID must start with 'web.' (reverse-DNS, e.g. web.com.example)")
        }
        guard case .array(let domains) = website["allowedDomains"]!, !domains.isEmpty, domains.allSatisfy({ $0.stringValue != nil }) else {
            throw BundleError(.invalidValue, "website.json: allowedDomains must be a non-empty array of origins")
        }
        guard let name = website["websiteName"]?.stringValue, !name.isEmpty else {
            throw BundleError(.invalidValue, "website.json: websiteName must be a non-empty string")
        }
        guard let token = website["authenticationToken"]?.stringValue, token.count >= 16 else {
            throw BundleError(.invalidValue, "website.json: authenticationToken must be a string of at least 16 characters")
        }
        guard let service = website["webServiceURL"]?.stringValue, service.hasPrefix("https://"), service.count > 8 else {
            throw BundleError(.invalidValue, "website.json: webServiceURL must be an https:// URL")
        }
        guard !service.hasSuffix("/") else {
            throw BundleError(.invalidValue, "website.json: webServiceURL must not end with '/' (Safari appends /v2/…)")
        }
        guard let format = website["urlFormatString"]?.stringValue, format.hasPrefix("http://") || format.hasPrefix("https://") else {
            throw BundleError(.invalidValue, "website.json: urlFormatString must be an http:// or https:// URL")
        }

        let iconset = files.filter { $0.path.hasPrefix("icon.iconset/") }
        for (name, pixels) in Self.icons {
            guard let file = iconset[path: "icon.iconset/" + name] else {
                throw BundleError(.missingFile, "icon.iconset/\(name) is missing (a \(pixels)×\(pixels) PNG)")
            }
            guard let size = PNGSize(file.contents) else {
                throw BundleError(.invalidImage, "icon.iconset/\(name) is not a PNG")
            }
            guard size.width == pixels && size.height == pixels else {
                throw BundleError(.invalidImage, "icon.iconset/\(name) is \(size.width)×\(size.height) pixels; it must be \(pixels)×\(pixels)")
            }
        }
        if let extra = iconset.first(where: { file in !Self.icons.contains { "icon.iconset/" + $0.name == file.path } }) {
            throw BundleError(.unexpectedFile, "\(extra.path) is not one of the six iconset files Safari expects")
        }
    }

    /// Validates, checks the certificate against `websitePushID`, and signs: manifest version 2
    /// (SHA-512 objects) by default, version 1 (SHA-1 strings) on request (§5.3, §5.4).
    public func sign(
        identity: CertificateIdentity, wwdr: [Certificate], manifestVersion: Int = 2, digest: SignatureDigest = .sha256,
        signingTime: Date = Date()
    ) throws(BundleError) -> SignedBundle {
        guard manifestVersion == 1 || manifestVersion == 2 else {
            throw BundleError(.invalidValue, "manifest version must be 1 or 2, got \(manifestVersion)")
        }
        try validate()
        let website = try websiteJSON()
        let requirements = SigningRequirements(
            prefix: "web.", kind: "a Website Push ID certificate", identifier: website["websitePushID"]?.stringValue ?? "",
            identifierKey: "websitePushID", file: "website.json", teamID: nil
        )
        let warnings = try requirements.check(identity, intermediates: wwdr, at: signingTime)
        let manifest = (manifestVersion == 1 ? ManifestFormat.sha1 : .sha512Objects).manifest(for: files)
        let signature = try BundleSigner.sign(manifest: manifest, identity: identity, intermediates: wwdr, digest: digest, signingTime: signingTime)
        return SignedBundle(files: files, manifest: manifest, signature: signature, warnings: warnings, mimeType: BundleMIMEType.pushPackage, signingTime: signingTime)
    }
}

/// The pixel size in a PNG's IHDR chunk (PNG §11.2.2), without decoding the image.
struct PNGSize {
    var width: Int
    var height: Int

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 24, Array(bytes[0..<8]) == Self.signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return nil }
        func be32(_ offset: Int) -> Int { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        width = be32(16)
        height = be32(20)
    }
}
