import HeraldAPNSMock
import HeraldTestSupport
import NIOSSL

extension HTTP1PushService {
    /// The service in `mode` with a certificate for 127.0.0.1 from a CA of its own, and that CA
    /// for a client to trust.
    package static func started(_ mode: Mode) throws -> (service: HTTP1PushService, authority: NIOSSLCertificate) {
        let authority = try MockCertificateAuthority(name: "HTTP/1.1 push service CA")
        let identity = try authority.issueServerIdentity()
        let service = try HTTP1PushService(
            certificatePEM: try identity.certificate.serializeAsPEM().pemString, keyPEM: try identity.privateKey.serializeAsPEM().pemString, mode: mode)
        return (service, try authority.tlsCertificate)
    }
}
