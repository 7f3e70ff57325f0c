import Foundation
import HeraldBundles
import HeraldTestSupport
import HeraldIdentity
import Testing

/// `herald pass` and `herald pushpackage` as a user runs them.
@Suite("herald pass and pushpackage, end to end", .timeLimit(.minutes(6)))
struct BundleCommandTests {
    let scratch: ScratchDirectory
    let pki: TestPKI

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestPKI()
    }

    /// Runs `herald` with `arguments` (``HeraldProcess``).
    func herald(_ arguments: [String], environment: [String: String] = [:]) async throws -> HeraldProcess.Result {
        try await HeraldProcess.run(arguments, environment: environment)
    }

    @Test("pass sign with the password from HERALD_CERT_PASSWORD, verify against the root, tampering caught")
    func pass() async throws {
        let p12 = try await scratch.p12(pki.leaf(uid: "pass.com.example.herald"), legacy: true, password: "s3cret", name: "pass")
        let wwdr = try scratch.writePEM(pki.wwdr, "wwdr.pem")
        let root = try scratch.writePEM(pki.root, "root.pem")
        let output = scratch.file("out.pkpass")
        let signed = try await herald(["pass", "sign", writePassDirectory(in: scratch), "--cert", p12, "--wwdr", wwdr, "-o", output], environment: ["HERALD_CERT_PASSWORD": "s3cret"])
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(signed.stdout.contains("signed pass written to \(output)"))
        let verified = try await herald(["pass", "verify", output, "--root", root])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("signer: pass.com.example.herald"))
        #expect(verified.stdout.hasSuffix("valid\n"))
        let tampered = scratch.file("tampered.pkpass")
        try await rezip(output, to: tampered, replace: ["pass.json": Array("{}".utf8)])
        let caught = try await herald(["pass", "verify", tampered, "--root", root])
        #expect(caught.status == 1)
        #expect(caught.stdout.contains("problem: pass.json was changed"))
    }

    @Test("pushpackage sign with manifest version 1 and verify")
    func pushPackage() async throws {
        let identity = try pki.leaf(uid: "web.com.example.herald")
        let certificate = try scratch.write("web.crt.pem", identity.certificate.serializeAsPEM().pemString)
        let key = try scratch.write("web.key.pem", identity.privateKey.serializeAsPEM().pemString)
        let wwdrDER = try scratch.write("wwdr.cer", pki.wwdr.serializeAsPEM().derBytes)  // DER, as Apple distributes it
        let output = scratch.file("package.zip")
        let signed = try await herald(["pushpackage", "sign", writePackageDirectory(in: scratch), "--cert", certificate, "--cert-key", key, "--wwdr", wwdrDER, "--manifest-version", "1", "-o", output])
        #expect(signed.status == 0, "\(signed.stderr)")
        let verified = try await herald(["pushpackage", "verify", output])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("give --root"))
    }

    @Test("errors: one clear line on stderr, exit 2, the password never shown")
    func errors() async throws {
        let p12 = try await scratch.p12(pki.leaf(uid: "pass.com.example.herald"), legacy: false, password: "right", name: "p")
        let wwdr = try scratch.writePEM(pki.wwdr, "wwdr.pem")
        let directory = try writePassDirectory(in: scratch)
        let cases: [([String], String)] = [
            (["pass", "sign", directory, "--cert", p12, "--cert-password", "wrong", "--wwdr", wwdr, "-o", scratch.file("x")], "wrong password"),
            (["pass", "sign", scratch.file("nope"), "--cert", p12, "--cert-password", "right", "--wwdr", wwdr, "-o", scratch.file("x")], "is not a directory"),
            (["pass", "sign", directory, "--cert", p12, "--cert-password", "right", "--wwdr", scratch.file("none.pem"), "-o", scratch.file("x")], "--wwdr: cannot read certificate file"),
            (["pushpackage", "sign", directory, "--cert", p12, "--cert-password", "right", "--wwdr", wwdr, "-o", scratch.file("x")], "website.json is missing"),
            (["pass", "sign", directory, "--wwdr", wwdr, "-o", scratch.file("x")], "signing needs a certificate"),
        ]
        for (arguments, message) in cases {
            let result = try await herald(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
            #expect(!result.stderr.contains("wrong\n") && !result.stderr.contains("right"))
        }
        let wrongKind = try await herald(["pushpackage", "verify", writePassDirectory(in: scratch, name: "dir") + "/pass.json"])
        #expect(wrongKind.status == 1)
    }
}
