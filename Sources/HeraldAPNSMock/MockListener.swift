import HeraldMockCore
import HeraldIdentity
import NIOCore
import NIOPosix
import NIOSSL

/// What the mock servers (HTTP/2, legacy gateway, feedback) share: their TLS identity and how
/// they listen.
enum MockListener {
    /// A connection past the server's limit: the channel is closed as soon as it is accepted.
    struct Refused: Error {}

    /// The given identity, or a certificate for local addresses from a fresh CA (returned too).
    static func identity(_ given: CertificateIdentity?) throws -> (identity: CertificateIdentity, authority: MockCertificateAuthority?) {
        if let given { return (given, nil) }
        let authority = try MockCertificateAuthority()
        return (try authority.issueServerIdentity(), authority)
    }

    /// A server TLS context; with `clientCertificateAuthorities`, clients must present a
    /// certificate issued by one of them (certificate authentication).
    static func tlsContext(
        identity: CertificateIdentity, clientCertificateAuthorities: [NIOSSLCertificate]?, applicationProtocols: [String] = []
    ) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) },
            privateKey: .privateKey(identity.tlsPrivateKey)
        )
        tls.applicationProtocols = applicationProtocols
        tls.minimumTLSVersion = .tlsv12
        // A client the mock closes gets a second to answer close_notify: one that floods instead
        // is only read (and dropped) that long.
        tls.shutdownTimeout = .seconds(1)
        if let clientCertificateAuthorities {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates(clientCertificateAuthorities)
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// Binds `host:port` with TLS first in every connection's pipeline, then `handlers`.
    static func bind(
        host: String, port: Int, group: any EventLoopGroup, sslContext: NIOSSLContext,
        handlers: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    try handlers(channel)
                }
            }
            .bind(host: host, port: port)
            .get()
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    static func authority(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
