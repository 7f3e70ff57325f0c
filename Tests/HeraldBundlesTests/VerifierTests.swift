import Foundation
import HeraldBundles
import HeraldTestSupport
import HeraldCore
import HeraldIdentity
import Testing
import X509

/// Rewrites a zip with Python: replaced or removed entries, and added ones (any name, even `../x`).
func rezip(_ source: String, to destination: String, replace: [String: [UInt8]] = [:], remove: Set<String> = [], add: [String: [UInt8]] = [:]) async throws {
    let script = """
    import sys, zipfile, json, base64
    src, dst, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if item.filename in spec["remove"]: continue
            data = base64.b64decode(spec["replace"][item.filename]) if item.filename in spec["replace"] else zin.read(item.filename)
            zout.writestr(item.filename, data)
        for name, data in spec["add"].items(): zout.writestr(name, base64.b64decode(data))
    """
    let spec: [String: Any] = [
        "replace": replace.mapValues { Data($0).base64EncodedString() }, "remove": Array(remove), "add": add.mapValues { Data($0).base64EncodedString() },
    ]
    let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
    try await runCommand("python3", ["-c", script, source, destination, json])
}

@Suite("Bundle verifier", .timeLimit(.minutes(6)))
struct VerifierTests {
    let scratch: ScratchDirectory
    let pki: TestPKI
    let signed: SignedBundle
    let zip: String

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestPKI()
        signed = try WalletPass(directory: writePassDirectory(in: scratch)).sign(identity: pki.leaf(uid: "pass.com.example.herald"), wwdr: [pki.wwdr])
        zip = try scratch.write("good.pkpass", signed.zipData())
    }

    func verify(_ path: String, roots: [Certificate] = []) async throws -> BundleVerification {
        await BundleVerifier.verify(zip: Array(try Data(contentsOf: URL(fileURLWithPath: path))), roots: roots)
    }

    @Test("a good pass verifies, up to the included WWDR or up to a given root")
    func good() async throws {
        let report = try await verify(zip)
        #expect(report.isValid, "\(report.problems)")
        #expect(report.kind == .pass)
        #expect(report.filesChecked == 7)
        #expect(report.signer == "pass.com.example.herald")
        #expect(report.signingTime != nil)
        #expect(report.certificates.count == 2)
        #expect(!report.chainChecked)
        let rooted = try await verify(zip, roots: [pki.root])
        #expect(rooted.isValid && rooted.chainChecked, "\(rooted.problems)")
    }

    @Test("a changed file is caught with both digests")
    func changedFile() async throws {
        let tampered = scratch.file("changed.pkpass")
        try await rezip(zip, to: tampered, replace: ["logo.png": png(width: 160, height: 51)])
        let report = try await verify(tampered)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.hasPrefix("logo.png was changed: its sha1 is ") == true, "\(report.problems)")
    }

    @Test("a missing file and an extra file are caught")
    func missingAndExtra() async throws {
        let missing = scratch.file("missing.pkpass")
        try await rezip(zip, to: missing, remove: ["fr.lproj/pass.strings"])
        #expect(try await verify(missing).problems == ["fr.lproj/pass.strings is in the manifest but missing from the bundle"])
        let extra = scratch.file("extra.pkpass")
        try await rezip(zip, to: extra, add: ["strip.png": png(width: 10, height: 10)])
        #expect(try await verify(extra).problems == ["strip.png is in the bundle but not in the manifest"])
    }

    @Test("a signature from another key: caught by the root, or by the manifest digest when it signs other content")
    func anotherKey() async throws {
        let impostor = try TestPKI()
        // An impostor with its own PKI signs exactly this pass: only the root can tell.
        let same = try WalletPass(directory: writePassDirectory(in: scratch, name: "Same.pass"))
            .sign(identity: impostor.leaf(uid: "pass.com.example.herald"), wwdr: [impostor.wwdr])
        #expect(same.manifest == signed.manifest)
        let forged = scratch.file("forged.pkpass")
        try await rezip(zip, to: forged, replace: ["signature": same.signature])
        let rooted = try await verify(forged, roots: [pki.root])
        #expect(!rooted.isValid)
        #expect(rooted.problems.first?.contains("does not chain to a trusted root") == true, "\(rooted.problems)")
        // A signature made for other content fails against any root, its own intermediate included.
        var pass = try JSONValue(parsing: String(contentsOfFile: scratch.file("Same.pass/pass.json"), encoding: .utf8)).objectValue!
        pass["serialNumber"] = "OTHER-1"
        let other = try WalletPass(directory: writePassDirectory(in: scratch, name: "Other.pass", pass: pass))
            .sign(identity: impostor.leaf(uid: "pass.com.example.herald"), wwdr: [impostor.wwdr])
        let swapped = scratch.file("swapped.pkpass")
        try await rezip(zip, to: swapped, replace: ["signature": other.signature])
        let mismatched = try await verify(swapped)
        #expect(mismatched.problems.first?.contains("Message digest mismatch") == true, "\(mismatched.problems)")
    }

    @Test("a root that did not issue the chain is reported")
    func wrongRoot() async throws {
        let report = try await verify(zip, roots: [try TestPKI().root])
        #expect(!report.isValid)
        #expect(report.problems.first?.contains("does not chain to a trusted root") == true, "\(report.problems)")
    }

    @Test("not a zip, no manifest, a path escaping the bundle")
    func malformed() async throws {
        let garbage = try scratch.write("garbage.pkpass", "not a zip")
        #expect(try await verify(garbage).problems.first?.contains("not a readable zip") == true)
        let noManifest = scratch.file("nomanifest.pkpass")
        try await rezip(zip, to: noManifest, remove: ["manifest.json"])
        #expect(try await verify(noManifest).problems == ["manifest.json is missing"])
        let escape = scratch.file("escape.pkpass")
        try await rezip(zip, to: escape, add: ["../evil.sh": Array("#!/bin/sh".utf8)])
        let report = try await verify(escape)
        #expect(report.problems.first?.contains("'..'") == true, "\(report.problems)")
    }

    @Test("push packages verify too, with either manifest version")
    func pushPackages() async throws {
        for version in [1, 2] {
            let package = try SafariPushPackage(directory: writePackageDirectory(in: scratch, name: "p\(version)"))
                .sign(identity: pki.leaf(uid: "web.com.example.herald"), wwdr: [pki.wwdr], manifestVersion: version)
            let path = try scratch.write("p\(version).zip", package.zipData())
            let report = try await verify(path, roots: [pki.root])
            #expect(report.isValid && report.kind == .pushPackage && report.filesChecked == 7, "\(report.problems)")
            let tampered = scratch.file("p\(version)-tampered.zip")
            try await rezip(path, to: tampered, replace: ["website.json": Array("{}".utf8)])
            #expect(try await verify(tampered).problems.first?.hasPrefix("website.json was changed: its \(version == 2 ? "sha512" : "sha1")") == true)
        }
    }
}
