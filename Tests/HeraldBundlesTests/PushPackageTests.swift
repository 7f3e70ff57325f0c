import Crypto
import Foundation
import HeraldBundles
import HeraldTestSupport
import HeraldCore
import HeraldIdentity
import Testing
import X509

/// A push package directory: website.json and the six icons.
func writePackageDirectory(in scratch: ScratchDirectory, name: String = "package", website: [String: JSONValue]? = nil, icons: [(String, Int)]? = nil) throws -> String {
    let json: JSONValue = .object(website ?? [
        "websiteName": "Herald Example", "websitePushID": "web.com.example.herald", "allowedDomains": ["https://example.com"],
        "urlFormatString": "https://example.com/%@/?flight=%@", "authenticationToken": "19f8d7a6e9fb8a7f6d9330dabe",
        "webServiceURL": "https://example.com/push",
    ])
    try scratch.write("\(name)/website.json", json.jsonString)
    for (icon, pixels) in icons ?? SafariPushPackage.icons.map({ ($0.name, $0.pixels) }) {
        try scratch.write("\(name)/icon.iconset/\(icon)", png(width: pixels, height: pixels))
    }
    return scratch.file(name)
}

@Suite("Safari push packages", .timeLimit(.minutes(6)))
struct PushPackageTests {
    let scratch: ScratchDirectory
    let pki: TestPKI

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestPKI()
    }

    @Test("version 2 (SHA-512) and version 1 (SHA-1) manifests; openssl cms -verify accepts the signature", arguments: [2, 1])
    func signedPackage(version: Int) async throws {
        let identity = try CertificateIdentity(file: await scratch.p12(pki.leaf(uid: "web.com.example.herald"), legacy: true, password: "pw", name: "web"), password: "pw")
        let signed = try SafariPushPackage(directory: writePackageDirectory(in: scratch)).sign(identity: identity, wwdr: [pki.wwdr], manifestVersion: version)
        let zip = try scratch.write("package.zip", signed.zipData())
        let extracted = scratch.file("x")
        try await unzipWithPython(zip, into: extracted)
        let root = try scratch.writePEM(pki.root, "root.pem")
        try await runCommand("openssl", ["cms", "-verify", "-binary", "-inform", "DER", "-in", extracted + "/signature", "-content", extracted + "/manifest.json", "-CAfile", root, "-out", "/dev/null"])

        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: extracted + "/manifest.json"))) as! [String: Any]
        #expect(manifest.count == 7)  // website.json and six icons, at the archive root
        for (path, entry) in manifest {
            let contents = try Data(contentsOf: URL(fileURLWithPath: extracted + "/" + path))
            if version == 2 {
                let object = try #require(entry as? [String: String])
                #expect(object["hashType"] == "sha512")
                #expect(object["hashValue"] == SHA512.hash(data: contents).map { String(format: "%02x", $0) }.joined(), "\(path)")
            } else {
                #expect(entry as? String == sha1Hex(contents), "\(path)")
            }
        }
        #expect(signed.mimeType == "application/zip")
    }

    static let invalidWebsites: [(String, @Sendable (inout [String: JSONValue]) -> Void, String)] = [
        ("no websiteName", { $0["websiteName"] = nil }, "'websiteName' is missing"),
        ("no websitePushID", { $0["websitePushID"] = nil }, "'websitePushID' is missing"),
        ("no allowedDomains", { $0["allowedDomains"] = nil }, "'allowedDomains' is missing"),
        ("no urlFormatString", { $0["urlFormatString"] = nil }, "'urlFormatString' is missing"),
        ("no authenticationToken", { $0["authenticationToken"] = nil }, "'authenticationToken' is missing"),
        ("no webServiceURL", { $0["webServiceURL"] = nil }, "'webServiceURL' is missing"),
        ("push ID without web.", { $0["websitePushID"] = "com.example.herald" }, "must start with 'web.'"),
        ("short token", { $0["authenticationToken"] = "0123456789abcde" }, "at least 16 characters"),
        ("http service", { $0["webServiceURL"] = "http://example.com/push" }, "must be an https:// URL"),
        ("trailing slash", { $0["webServiceURL"] = "https://example.com/push/" }, "must not end with '/'"),
        ("ftp format string", { $0["urlFormatString"] = "ftp://example.com/%@" }, "http:// or https://"),
        ("domains not an array", { $0["allowedDomains"] = "https://example.com" }, "allowedDomains must be a non-empty array"),
    ]

    @Test("every website.json rule, named with its file and key")
    func websiteValidation() throws {
        let base = try JSONValue(parsing: String(contentsOfFile: writePackageDirectory(in: scratch) + "/website.json", encoding: .utf8)).objectValue!
        for (index, (name, change, mention)) in Self.invalidWebsites.enumerated() {
            var website = base
            change(&website)
            let directory = try writePackageDirectory(in: scratch, name: "invalid\(index)", website: website)
            let error = #expect(throws: BundleError.self, "\(name)") { try SafariPushPackage(directory: directory).validate() }
            #expect(error?.message.hasPrefix("website.json") == true, "\(name): \(error?.message ?? "")")
            #expect(error?.message.contains(mention) == true, "\(name): \(error?.message ?? "")")
        }
    }

    @Test("exactly the six iconset PNGs, each at its pixel size")
    func iconset() throws {
        var icons = SafariPushPackage.icons.map { ($0.name, $0.pixels) }
        icons.removeLast()
        let missing = #expect(throws: BundleError.self) { try SafariPushPackage(directory: writePackageDirectory(in: scratch, name: "a", icons: icons)).validate() }
        #expect(missing?.code == .missingFile && missing?.message.contains("icon_128x128@2x.png") == true)

        var wrongSize = SafariPushPackage.icons.map { ($0.name, $0.pixels) }
        wrongSize[2].1 = 31
        let small = #expect(throws: BundleError.self) { try SafariPushPackage(directory: writePackageDirectory(in: scratch, name: "b", icons: wrongSize)).validate() }
        #expect(small?.code == .invalidImage && small?.message.contains("31×31 pixels; it must be 32×32") == true)

        let notPNG = try writePackageDirectory(in: scratch, name: "c")
        try scratch.write("c/icon.iconset/icon_16x16.png", "GIF89a")
        let gif = #expect(throws: BundleError.self) { try SafariPushPackage(directory: notPNG).validate() }
        #expect(gif?.code == .invalidImage && gif?.message.contains("not a PNG") == true)

        let extra = try writePackageDirectory(in: scratch, name: "d")
        try scratch.write("d/icon.iconset/icon_512x512.png", png(width: 512, height: 512))
        let more = #expect(throws: BundleError.self) { try SafariPushPackage(directory: extra).validate() }
        #expect(more?.code == .unexpectedFile)
    }

    @Test("the certificate must be a Website Push ID certificate for this websitePushID")
    func certificateKind() throws {
        let package = try SafariPushPackage(directory: writePackageDirectory(in: scratch))
        let pass = #expect(throws: BundleError.self) { try package.sign(identity: pki.leaf(uid: "pass.com.example.herald"), wwdr: [pki.wwdr]) }
        #expect(pass?.message.contains("not a Website Push ID certificate") == true)
        let other = #expect(throws: BundleError.self) { try package.sign(identity: pki.leaf(uid: "web.com.example.other"), wwdr: [pki.wwdr]) }
        #expect(other?.message.contains("websitePushID 'web.com.example.herald' does not match") == true)
    }

    @Test("a package built in memory")
    func inMemory() throws {
        let package = try SafariPushPackage(
            website: [
                "websiteName": "Herald", "websitePushID": "web.com.example.herald", "allowedDomains": ["https://example.com"],
                "urlFormatString": "https://example.com/%@", "authenticationToken": "0123456789abcdef", "webServiceURL": "https://example.com/push",
            ],
            icons: Dictionary(uniqueKeysWithValues: SafariPushPackage.icons.map { ($0.name, png(width: $0.pixels, height: $0.pixels)) })
        )
        let signed = try package.sign(identity: pki.leaf(uid: "web.com.example.herald"), wwdr: [pki.wwdr])
        #expect(signed.files.count == 9)
    }
}
