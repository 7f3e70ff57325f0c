import ArgumentParser
import HeraldAPNS
import HeraldCore
import HeraldIdentity
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificate credentials: a `.p12` or PEM certificate (with `--cert-key`), password from
/// `--cert-password` or `HERALD_CERT_PASSWORD`.
struct CertificateOptions: ParsableArguments {
    @Option(name: .customLong("cert"), help: ArgumentHelp("The certificate with its key: a .p12, or PEM (key in the same file or --cert-key).", valueName: "FILE.p12|FILE.pem"))
    var certificate: String?

    @Option(name: .customLong("cert-key"), help: ArgumentHelp("The PEM private key, when --cert is a PEM certificate without it.", valueName: "KEY.pem"))
    var certificateKey: String?

    @Option(name: .customLong("cert-password"), help: "The .p12 password (or set HERALD_CERT_PASSWORD).")
    var certificatePassword: String?

    /// The identity, or `nil` when no certificate was given.
    func makeIdentity() throws -> CertificateIdentity? {
        guard let certificate else {
            if certificateKey != nil { throw CommandFailure.usage("--cert-key needs --cert") }
            return nil
        }
        let password = certificatePassword ?? getenv("HERALD_CERT_PASSWORD").map { String(cString: $0) }
        do {
            let identity = try CertificateIdentity(file: certificate, keyFile: certificateKey, password: password)
            if let warning = try identity.checkValidity() { Terminal.error("warning: \(warning)") }
            return identity
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}

/// Which CAs to trust for the server's certificate: the system's, plus `--ca-file`.
struct TrustOptions: ParsableArguments {
    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Also trust the CA certificates in this PEM file (e.g. a mock's).", valueName: "FILE.pem"))
    var caFile: String?

    func trustRoots() throws -> TrustRoots {
        guard let caFile else { return .system }
        do {
            let certificates = try NIOSSLCertificate.fromPEMFile(caFile)
            guard !certificates.isEmpty else { throw CommandFailure.usage("--ca-file '\(caFile)' holds no PEM certificate") }
            return .systemAnd(certificates)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.usage("--ca-file '\(caFile)': cannot read PEM certificates (\(error))")
        }
    }
}

/// Connection tuning and trust for the HTTP/2 sending commands.
struct ConnectionTuningOptions: ParsableArguments {
    @OptionGroup var trust: TrustOptions

    @Option(help: "The most HTTP/2 connections to open.")
    var connections: Int = 4

    @Option(help: "The most notifications in flight at once.")
    var concurrency: Int = 1000

    func validate() throws {
        guard connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
    }

    func trustRoots() throws -> TrustRoots {
        try trust.trustRoots()
    }
}
