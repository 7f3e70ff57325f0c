import HeraldMockCore
import HeraldCore
import HeraldIdentity
import HeraldLegacyWire
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// A mock of the legacy feedback service (apns-spec §4.6): after the TLS handshake it sends its
/// tuples and closes. Like APNs it clears the list once read.
public final class MockFeedbackServer: Sendable {
    /// How the mock feedback service behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// The TLS certificate: `nil` makes one for 127.0.0.1, ::1 and localhost from a fresh CA.
        public var tlsIdentity: CertificateIdentity?
        /// Require client certificates issued by these CAs.
        public var clientCertificateAuthorities: [NIOSSLCertificate]?
        /// The tuples the first reader gets.
        public var tuples: [FeedbackTuple] = []
        /// Keep the connection open after sending, like a service that never closes (to test
        /// readers' timeouts). Default `false`.
        public var holdsConnectionOpen = false

        public init() {}
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let serverIdentity: CertificateIdentity
    /// The CA that issued the server's certificate, when the mock made it.
    public let certificateAuthority: MockCertificateAuthority?
    private let channel = Mutex<(any Channel)?>(nil)
    private let list: Mutex<[FeedbackTuple]>
    private let reads = Atomic<Int>(0)

    public init(configuration: Configuration = Configuration(), eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.configuration = configuration
        group = eventLoopGroup
        list = Mutex(configuration.tuples)
        (serverIdentity, certificateAuthority) = try MockListener.identity(configuration.tlsIdentity)
    }

    /// Binds and starts serving.
    public func start() async throws {
        let sslContext = try MockListener.tlsContext(identity: serverIdentity, clientCertificateAuthorities: configuration.clientCertificateAuthorities)
        let holdOpen = configuration.holdsConnectionOpen
        let bound = try await MockListener.bind(host: configuration.host, port: configuration.port, group: group, sslContext: sslContext) { [self] channel in
            try channel.pipeline.syncOperations.addHandler(MockFeedbackHandler(take: { self.take() }, holdOpen: holdOpen))
        }
        channel.withLock { $0 = bound }
    }

    /// Stops listening.
    public func shutdown() async throws {
        let bound = channel.withLock { channel -> (any Channel)? in
            defer { channel = nil }
            return channel
        }
        try await bound?.close()
    }

    /// Adds tuples for the next reader.
    public func add(_ tuples: [FeedbackTuple]) {
        list.withLock { $0.append(contentsOf: tuples) }
    }

    /// Tuples not read yet.
    public var pending: [FeedbackTuple] { list.withLock { $0 } }

    /// Connections that were sent the list.
    public var readCount: Int { reads.load(ordering: .relaxed) }

    /// The port it listens on (after ``start()``).
    public var port: Int {
        channel.withLock { $0?.localAddress?.port } ?? configuration.port
    }

    /// Where readers connect.
    public var endpoint: LegacyEndpoint { LegacyEndpoint(host: configuration.host, port: port) }

    /// The CA certificate clients must trust, for NIOSSL trust roots (empty when a certificate was given).
    public var trustRoots: [NIOSSLCertificate] {
        (try? certificateAuthority?.tlsCertificate).map { [$0] } ?? []
    }

    private func take() -> [FeedbackTuple] {
        reads.wrappingAdd(1, ordering: .relaxed)
        return list.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }
}

/// Sends the list once TLS is up, then closes (unless told to hold the connection open).
private final class MockFeedbackHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let take: @Sendable () -> [FeedbackTuple]
    private let holdOpen: Bool

    init(take: @escaping @Sendable () -> [FeedbackTuple], holdOpen: Bool) {
        self.take = take
        self.holdOpen = holdOpen
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            var bytes = context.channel.allocator.buffer(capacity: 64)
            for tuple in take() { tuple.write(into: &bytes) }
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let holdOpen = self.holdOpen
            context.writeAndFlush(NIOAny(bytes)).assumeIsolated().whenComplete { _ in
                if !holdOpen { loopBound.value.close(promise: nil) }
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // the service reads nothing

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
