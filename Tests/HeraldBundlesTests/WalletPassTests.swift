import Crypto
import Foundation
import HeraldBundles
import HeraldTestSupport
import HeraldCore
import HeraldIdentity
import Testing
import X509

/// A pass directory with images, localisations and the pass.json keys Wallet requires.
func writePassDirectory(in scratch: ScratchDirectory, name: String = "Pass.pass", pass: [String: JSONValue]? = nil) throws -> String {
    let json: JSONValue = .object(pass ?? [
        "formatVersion": 1, "passTypeIdentifier": "pass.com.example.herald", "serialNumber": "E5982H-I2",
        "teamIdentifier": .string(TestPKI.teamID), "organizationName": "Herald Tests", "description": "Boarding pass",
        "boardingPass": ["transitType": "PKTransitTypeAir", "primaryFields": [["key": "origin", "value": "SFO"]]],
        "webServiceURL": "https://example.com/passes", "authenticationToken": "vxwxd7J8AlNNFPS8k0a0FfUFtq0ewzFdc",
        "barcodes": [["message": "123456789", "format": "PKBarcodeFormatQR", "messageEncoding": "iso-8859-1"]],
    ])
    try scratch.write("\(name)/pass.json", json.jsonString)
    try scratch.write("\(name)/icon.png", png(width: 29, height: 29))
    try scratch.write("\(name)/icon@2x.png", png(width: 58, height: 58))
    try scratch.write("\(name)/logo.png", png(width: 160, height: 50))
    try scratch.write("\(name)/en.lproj/pass.strings", "\"origin\" = \"San Francisco\";\n")
    try scratch.write("\(name)/fr.lproj/pass.strings", "\"origin\" = \"San Francisco (FR)\";\n")
    try scratch.write("\(name)/fr.lproj/logo.png", png(width: 160, height: 50))
    try scratch.write("\(name)/.DS_Store", "ignored")
    return scratch.file(name)
}

/// Unzips with Python's zipfile, an implementation independent of Herald's.
func unzipWithPython(_ zip: String, into directory: String) async throws {
    try await runCommand("python3", ["-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])", zip, directory])
}

func sha1Hex(_ bytes: some DataProtocol) -> String {
    Insecure.SHA1.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

@Suite("Wallet passes", .timeLimit(.minutes(6)))
struct WalletPassTests {
    let scratch: ScratchDirectory
    let pki: TestPKI

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestPKI()
    }

    @Test("a signed pass, from a legacy and a modern .p12: openssl cms -verify accepts it; every digest, signing-time and the WWDR are there", arguments: [true, false])
    func signedPassVerifiesWithOpenSSL(legacy: Bool) async throws {
        let identity = try CertificateIdentity(
            file: await scratch.p12(pki.leaf(uid: "pass.com.example.herald"), legacy: legacy, password: "pw", name: "pass"), password: "pw"
        )
        let pass = try WalletPass(directory: writePassDirectory(in: scratch))
        let signed = try pass.sign(identity: identity, wwdr: [pki.wwdr])
        let output = scratch.file("out.pkpass")
        try signed.write(toFile: output)

        let extracted = scratch.file("extracted")
        try await unzipWithPython(output, into: extracted)
        let root = try scratch.writePEM(pki.root, "root.pem")
        // The command from the issue, as an independent check of the signature and its chain.
        try await runCommand("openssl", ["cms", "-verify", "-binary", "-inform", "DER", "-in", extracted + "/signature", "-content", extracted + "/manifest.json", "-CAfile", root, "-out", "/dev/null"])

        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: extracted + "/manifest.json"))) as! [String: String]
        let expected = ["pass.json", "icon.png", "icon@2x.png", "logo.png", "en.lproj/pass.strings", "fr.lproj/pass.strings", "fr.lproj/logo.png"]
        #expect(Set(manifest.keys) == Set(expected), "lproj files included, .DS_Store, manifest and signature not")
        for path in expected {
            #expect(manifest[path] == sha1Hex(try Data(contentsOf: URL(fileURLWithPath: extracted + "/" + path))), "\(path)")
        }
        let printed = try await runCommand("openssl", ["cms", "-cmsout", "-print", "-inform", "DER", "-in", extracted + "/signature"]).all
        #expect(printed.contains("signingTime"))
        #expect(printed.contains("messageDigest"))
        #expect(printed.contains("contentType"))
        #expect(printed.contains("sha256"))
        let certificates = try await runCommand("openssl", ["pkcs7", "-inform", "DER", "-in", extracted + "/signature", "-print_certs", "-noout"]).all
        #expect(certificates.contains("Worldwide Developer Relations"), "the WWDR intermediate is included")
        #expect(certificates.contains("pass.com.example.herald"), "the signer is included")
    }

    @Test("SHA-1 signatures for RSA keys, as older tools sign; refused for EC keys")
    func sha1() async throws {
        let identity = try pki.leaf(uid: "pass.com.example.herald")
        let pass = try WalletPass(directory: writePassDirectory(in: scratch))
        let signed = try pass.sign(identity: identity, wwdr: [pki.wwdr], digest: .sha1)
        let signature = try scratch.write("sig.der", signed.signature)
        let manifest = try scratch.write("manifest.json", signed.manifest)
        let root = try scratch.writePEM(pki.root, "root.pem")
        try await runCommand("openssl", ["cms", "-verify", "-binary", "-inform", "DER", "-in", signature, "-content", manifest, "-CAfile", root, "-out", "/dev/null"])
        #expect(try await runCommand("openssl", ["cms", "-cmsout", "-print", "-inform", "DER", "-in", signature]).all.contains("sha1"))
    }

    @Test("the same signed pass zips to the same bytes, in memory, to a file, or streamed")
    func outputs() throws {
        let signed = try WalletPass(directory: writePassDirectory(in: scratch)).sign(identity: pki.leaf(uid: "pass.com.example.herald"), wwdr: [pki.wwdr])
        let memory = try signed.zipData()
        let path = scratch.file("file.pkpass")
        try signed.write(toFile: path)
        var streamed: [UInt8] = []
        var chunks = 0
        try signed.write(chunkSize: 1000) { chunk in
            chunks += 1
            streamed += chunk
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(memory))
        #expect(streamed == memory)
        #expect(chunks == (memory.count + 999) / 1000)
        #expect(signed.mimeType == "application/vnd.apple.pkpass")
    }

    @Test("a pass built in memory signs like one from a directory")
    func inMemory() throws {
        let pass = try WalletPass(
            pass: [
                "formatVersion": 1, "passTypeIdentifier": "pass.com.example.herald", "serialNumber": "1", "teamIdentifier": .string(TestPKI.teamID),
                "organizationName": "Herald", "description": "Coupon", "coupon": ["primaryFields": []],
            ],
            files: [try BundleFile(path: "icon.png", contents: png(width: 29, height: 29)), try BundleFile(path: "de.lproj/pass.strings", contents: Array("\"a\" = \"b\";".utf8))]
        )
        let signed = try pass.sign(identity: pki.leaf(uid: "pass.com.example.herald"), wwdr: [pki.wwdr])
        #expect(signed.files.map(\.path).sorted() == ["de.lproj/pass.strings", "icon.png", "manifest.json", "pass.json", "signature"])
    }

    @Test("a .pkpasses bundle holds up to 10 passes")
    func passesBundle() async throws {
        let identity = try pki.leaf(uid: "pass.com.example.herald")
        let signed = try WalletPass(directory: writePassDirectory(in: scratch)).sign(identity: identity, wwdr: [pki.wwdr])
        let bundle = try PassesBundle(passes: [signed, signed])
        let path = try scratch.write("two.pkpasses", bundle.zipData())
        try await unzipWithPython(path, into: scratch.file("two"))
        #expect(FileManager.default.fileExists(atPath: scratch.file("two/pass2.pkpass")))
        #expect(PassesBundle.mimeType == "application/vnd.apple.pkpasses")
        let error = #expect(throws: BundleError.self) { try PassesBundle(passes: Array(repeating: signed, count: 11)) }
        #expect(error?.code == .tooManyPasses)
    }

    /// pass.json variants and what must be said about them.
    static let invalidPasses: [(String, @Sendable (inout [String: JSONValue]) -> Void, BundleError.Code, String)] = [
        ("no formatVersion", { $0["formatVersion"] = nil }, .missingKey, "formatVersion"),
        ("formatVersion 2", { $0["formatVersion"] = 2 }, .invalidValue, "formatVersion must be the number 1"),
        ("formatVersion as text", { $0["formatVersion"] = "1" }, .invalidValue, "formatVersion"),
        ("no passTypeIdentifier", { $0["passTypeIdentifier"] = nil }, .missingKey, "'passTypeIdentifier'"),
        ("no serialNumber", { $0["serialNumber"] = nil }, .missingKey, "'serialNumber'"),
        ("no teamIdentifier", { $0["teamIdentifier"] = nil }, .missingKey, "'teamIdentifier'"),
        ("no organizationName", { $0["organizationName"] = nil }, .missingKey, "'organizationName'"),
        ("no description", { $0["description"] = nil }, .missingKey, "'description'"),
        ("empty serialNumber", { $0["serialNumber"] = "" }, .invalidValue, "'serialNumber' must be a non-empty string"),
        ("no style", { $0["boardingPass"] = nil }, .missingKey, "needs one style key"),
        ("two styles", { $0["coupon"] = [:] }, .invalidValue, "boardingPass and coupon"),
        ("boarding pass without transitType", { $0["boardingPass"] = ["primaryFields": []] }, .missingKey, "transitType"),
        ("unknown transitType", { $0["boardingPass"] = ["transitType": "PKTransitTypeRocket"] }, .invalidValue, "PKTransitTypeRocket"),
        ("short authenticationToken", { $0["authenticationToken"] = "short" }, .invalidValue, "at least 16 characters"),
        ("webServiceURL without token", { $0["authenticationToken"] = nil }, .missingKey, "authenticationToken"),
    ]

    @Test("every pass.json rule, named with its file and key")
    func passValidation() throws {
        let base = try JSONValue(parsing: String(contentsOfFile: writePassDirectory(in: scratch) + "/pass.json", encoding: .utf8)).objectValue!
        for (index, (name, change, code, mention)) in Self.invalidPasses.enumerated() {
            var pass = base
            change(&pass)
            let directory = try writePassDirectory(in: scratch, name: "invalid\(index)", pass: pass)
            let error = #expect(throws: BundleError.self, "\(name)") { try WalletPass(directory: directory).validate() }
            #expect(error?.code == code, "\(name): \(String(describing: error))")
            #expect(error?.message.hasPrefix("pass.json") == true, "\(name): \(error?.message ?? "")")
            #expect(error?.message.contains(mention) == true, "\(name): \(error?.message ?? "")")
        }
    }

    @Test("icon.png is required; manifest.json and signature may not be supplied")
    func requiredFiles() throws {
        let directory = try writePassDirectory(in: scratch)
        try FileManager.default.removeItem(atPath: directory + "/icon.png")
        let error = #expect(throws: BundleError.self) { try WalletPass(directory: directory).validate() }
        #expect(error?.code == .missingFile)
        #expect(error?.message.contains("icon.png") == true)
        try scratch.write("Pass.pass/manifest.json", "{}")
        let supplied = #expect(throws: BundleError.self) { try WalletPass(directory: directory) }
        #expect(supplied?.code == .unexpectedFile)
    }

    @Test("the certificate must be a pass certificate for this pass's identifier and team, valid, from the WWDR given")
    func certificateRules() throws {
        let pass = try WalletPass(directory: writePassDirectory(in: scratch))
        func failure(_ identity: CertificateIdentity, wwdr: [Certificate]? = nil) -> BundleError? {
            #expect(throws: BundleError.self) { _ = try pass.sign(identity: identity, wwdr: wwdr ?? [pki.wwdr]) }
        }
        let web = failure(try pki.leaf(uid: "web.com.example.herald"))
        #expect(web?.code == .identity && web?.message.contains("not a Pass Type ID certificate") == true)
        let other = failure(try pki.leaf(uid: "pass.com.example.other"))
        #expect(other?.message.contains("passTypeIdentifier 'pass.com.example.herald' does not match") == true)
        let team = failure(try pki.leaf(uid: "pass.com.example.herald", team: "OTHERTEAM1"))
        #expect(team?.message.contains("teamIdentifier 'HERALDTEAM' does not match the certificate's team 'OTHERTEAM1'") == true)
        let expired = failure(try pki.leaf(uid: "pass.com.example.herald", validFor: -60))
        #expect(expired?.message.contains("expired") == true)
        // Another intermediate with the very same name: only its key tells it apart.
        let wrongWWDR = failure(try pki.leaf(uid: "pass.com.example.herald"), wwdr: [try TestPKI().wwdr])
        #expect(wrongWWDR?.message.contains("did not issue") == true)
        let noWWDR = failure(try pki.leaf(uid: "pass.com.example.herald"), wwdr: [])
        #expect(noWWDR?.message.contains("WWDR") == true)
        // Expiring within 30 days signs, with a warning.
        let soon = try pass.sign(identity: pki.leaf(uid: "pass.com.example.herald", validFor: 5 * 86400), wwdr: [pki.wwdr])
        #expect(soon.warnings.count == 1 && soon.warnings[0].contains("expires on"))
    }

    @Test("files never come from outside the pass directory")
    func pathEscapes() throws {
        let directory = try writePassDirectory(in: scratch)
        try scratch.write("secret.txt", "outside")
        try FileManager.default.createSymbolicLink(atPath: directory + "/strip.png", withDestinationPath: scratch.file("secret.txt"))
        let error = #expect(throws: BundleError.self) { try WalletPass(directory: directory) }
        #expect(error?.code == .pathEscape)
        #expect(error?.message.contains("strip.png") == true)
        try FileManager.default.removeItem(atPath: directory + "/strip.png")
        // A link that stays inside is read like the file it names.
        try FileManager.default.createSymbolicLink(atPath: directory + "/thumbnail.png", withDestinationPath: directory + "/logo.png")
        #expect(try WalletPass(directory: directory).files.contains { $0.path == "thumbnail.png" })
        for bad in ["../pass.json", "/etc/passwd", "a/../b", "a//b", "./a", "a\\b"] {
            #expect(throws: BundleError.self, "\(bad)") { try BundleFile(path: bad, contents: []) }
        }
    }
}
