import ArgumentParser
import HeraldBundles
import HeraldCore
import HeraldIdentity
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald pass`: sign and verify Wallet passes.
struct PassCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pass",
        abstract: "Sign and verify Wallet passes (.pkpass).",
        subcommands: [Sign.self, Verify.self]
    )

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign a pass directory (pass.json, icon.png, images, xx.lproj/) into a .pkpass.")

        @Argument(help: ArgumentHelp("The pass directory.", valueName: "DIR"))
        var directory: String

        @OptionGroup var signing: SigningOptions

        func run() async throws {
            let pass: WalletPass
            do {
                pass = try WalletPass(directory: directory)
            } catch {
                throw CommandFailure.usage(error.message)
            }
            let (identity, wwdr) = try signing.load()
            let signed: SignedBundle
            do {
                signed = try pass.sign(identity: identity, wwdr: wwdr, digest: signing.digest)
            } catch {
                throw CommandFailure.usage(error.message)
            }
            try signing.write(signed, kind: "pass")
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a .pkpass: manifest digests, files, and the signature.")

        @Argument(help: ArgumentHelp("The .pkpass file.", valueName: "FILE"))
        var file: String

        @OptionGroup var verifying: VerifyingOptions

        func run() async throws {
            try await verifying.verify(file, expecting: .pass)
        }
    }
}

/// `herald pushpackage`: sign and verify Safari push packages.
struct PushPackageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushpackage",
        abstract: "Sign and verify Safari website push packages.",
        subcommands: [Sign.self, Verify.self]
    )

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign a package directory (website.json, icon.iconset/) into a zip.")

        @Argument(help: ArgumentHelp("The package directory.", valueName: "DIR"))
        var directory: String

        @OptionGroup var signing: SigningOptions

        @Option(name: .customLong("manifest-version"), help: "2: SHA-512 manifest (current); 1: SHA-1 (older Safari).")
        var manifestVersion: Int = 2

        func validate() throws {
            guard manifestVersion == 1 || manifestVersion == 2 else { throw ValidationError("--manifest-version must be 1 or 2") }
        }

        func run() async throws {
            let package: SafariPushPackage
            do {
                package = try SafariPushPackage(directory: directory)
            } catch {
                throw CommandFailure.usage(error.message)
            }
            let (identity, wwdr) = try signing.load()
            let signed: SignedBundle
            do {
                signed = try package.sign(identity: identity, wwdr: wwdr, manifestVersion: manifestVersion, digest: signing.digest)
            } catch {
                throw CommandFailure.usage(error.message)
            }
            try signing.write(signed, kind: "push package")
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a push package: manifest digests, files, and the signature.")

        @Argument(help: ArgumentHelp("The push package zip.", valueName: "FILE"))
        var file: String

        @OptionGroup var verifying: VerifyingOptions

        func run() async throws {
            try await verifying.verify(file, expecting: .pushPackage)
        }
    }
}

/// The certificate, WWDR intermediate, digest and output of the `sign` commands.
struct SigningOptions: ParsableArguments {
    @OptionGroup(title: "Signing certificate") var certificate: CertificateOptions

    @Option(help: ArgumentHelp("Apple's WWDR intermediate certificate that issued yours (PEM or DER).", valueName: "WWDR.pem"))
    var wwdr: String

    @Option(help: "Signature digest: sha256 (default) or sha1.")
    var digest: SignatureDigest = .sha256

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write the signed bundle.", valueName: "OUT"))
    var output: String

    func load() throws -> (CertificateIdentity, [Certificate]) {
        guard let identity = try certificate.makeIdentity() else {
            throw CommandFailure.usage("signing needs a certificate: --cert FILE.p12 (or PEM with --cert-key)")
        }
        do {
            return (identity, try CertificateFile.load(wwdr))
        } catch {
            throw CommandFailure.usage("--wwdr: \(error.message)")
        }
    }

    func write(_ signed: SignedBundle, kind: String) throws {
        for warning in signed.warnings { Terminal.error("warning: \(warning)") }
        do {
            try signed.write(toFile: output)
        } catch {
            throw CommandFailure.usage(error.message)
        }
        Terminal.line("signed \(kind) written to \(output) (\(signed.files.count) files, \(signed.mimeType))")
    }
}

/// The root of the `verify` commands; exit 0 when valid, 1 when not.
struct VerifyingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Trusted root to check the signature's chain against (Apple's root CA for real bundles).", valueName: "ROOT.pem"))
    var root: String?

    func verify(_ file: String, expecting kind: BundleVerification.Kind) async throws {
        let bytes = try FileContents.readArgument(file, what: "bundle")
        var roots: [Certificate] = []
        if let root {
            do {
                roots = try CertificateFile.load(root)
            } catch {
                throw CommandFailure.usage("--root: \(error.message)")
            }
        }
        let report = await BundleVerifier.verify(zip: bytes, roots: roots)
        var problems = report.problems
        if report.kind != kind && report.kind != .unknown {
            problems.append("this is a \(report.kind == .pass ? "pass" : "push package"), not a \(kind == .pass ? "pass" : "push package")")
        }
        Terminal.line("\(file): \(report.filesChecked) files checked against manifest.json")
        if let signer = report.signer { Terminal.line("signer: \(signer)") }
        if !report.certificates.isEmpty { Terminal.line("certificates in the signature: \(report.certificates.joined(separator: ", "))") }
        if let time = report.signingTime { Terminal.line("signing time: \(time.formatted(.iso8601))") }
        Terminal.line(report.chainChecked ? "chain checked up to \(root!)" : "chain checked up to the intermediate in the signature only (give --root to check the root)")
        for problem in problems { Terminal.line("problem: \(problem)") }
        Terminal.line(problems.isEmpty ? "valid" : "NOT valid: \(problems.count) problem\(problems.count == 1 ? "" : "s")")
        Terminal.flush()
        if !problems.isEmpty { throw ExitCode(1) }
    }
}

extension SignatureDigest: ExpressibleByArgument {}
