import HeraldAPNSMock
import NIOCore
import NIOPosix
import NIOSSL

/// A TLS server on 127.0.0.1 that offers only `http/1.1` by ALPN and answers nothing: what a
/// client that needs HTTP/2 must refuse (`http2NotOffered`). Close it with `channel.close()`.
struct HTTP1OnlyTLSServer {
    let channel: any Channel
    /// The CA its certificate is issued by.
    let authority: MockCertificateAuthority

    var port: Int { channel.localAddress?.port ?? 0 }

    static func start() async throws -> HTTP1OnlyTLSServer {
        let authority = try MockCertificateAuthority()
        let identity = try authority.issueServerIdentity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) }, privateKey: .privateKey(identity.tlsPrivateKey)
        )
        tls.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return HTTP1OnlyTLSServer(channel: channel, authority: authority)
    }
}
