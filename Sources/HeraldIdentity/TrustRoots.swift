import NIOSSL

/// Trusted certificate authorities for a server's certificate, shared by the HTTP/2 client and
/// the legacy gateway and feedback connections. Verification is always on.
public enum TrustRoots: Sendable {
    /// The operating system's roots (Apple's servers chain to them).
    case system
    /// The system's roots and these extra CAs (PEM), e.g. a mock's or a gateway's.
    case systemAnd([NIOSSLCertificate])
    /// Only these CAs.
    case only([NIOSSLCertificate])

    /// The system's roots plus the PEM certificates in `file`.
    public static func systemAnd(pemFile file: String) throws -> TrustRoots {
        .systemAnd(try NIOSSLCertificate.fromPEMFile(file))
    }

    /// Sets the roots of a client TLS configuration.
    public func apply(to tls: inout TLSConfiguration) {
        tls.certificateVerification = .fullVerification
        switch self {
        case .system:
            tls.trustRoots = .default
        case .systemAnd(let extra):
            tls.trustRoots = .default
            tls.additionalTrustRoots = [.certificates(extra)]
        case .only(let roots):
            tls.trustRoots = .certificates(roots)
        }
    }
}

extension CertificateIdentity {
    /// Presents this certificate (and its chain) as the TLS client certificate.
    public func apply(to tls: inout TLSConfiguration) {
        tls.certificateChain = tlsCertificateChain.map { .certificate($0) }
        tls.privateKey = .privateKey(tlsPrivateKey)
    }
}
