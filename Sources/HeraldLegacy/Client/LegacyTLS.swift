import HeraldIdentity
import NIOSSL

/// The TLS of the binary interface, the same for the gateway and the feedback service: TLS 1.2 or
/// later, the server verified against `trustRoots`, the push certificate presented (apns-spec §4).
enum LegacyTLS {
    static func context(trustRoots: TrustRoots, identity: CertificateIdentity) throws(LegacyError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        trustRoots.apply(to: &tls)
        identity.apply(to: &tls)
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw LegacyError(.connectionFailed, "the TLS configuration could not be built: \(error)")
        }
    }
}
