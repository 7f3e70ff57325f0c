import HeraldMockCore
import HeraldCore
import HeraldIdentity
import HeraldLegacyWire
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A mock of the legacy binary gateway (apns-spec §4): TLS, strict parsing of commands 0, 1 and
/// 2, error responses with the right status (2, 4, 5, 7, 8, 128) followed by closing the
/// connection, scripted errors and shutdown (status 10), and exact counts of what it accepted.
///
/// ```swift
/// let gateway = try MockLegacyGateway()
/// try await gateway.start()
/// // point a LegacyClient at gateway.endpoint, trusting gateway.trustRoots
/// try await gateway.shutdown()
/// ```
public final class MockLegacyGateway: Sendable {
    /// How the mock gateway behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// The TLS certificate: `nil` makes one for 127.0.0.1, ::1 and localhost from a fresh CA.
        public var tlsIdentity: CertificateIdentity?
        /// Require client certificates issued by these CAs, as Apple's gateway did.
        public var clientCertificateAuthorities: [NIOSSLCertificate]?
        /// How many accepted notifications and rejections to keep for inspection (the counts are
        /// always exact). Default 10 000.
        public var recordLimit = 10_000
        /// Scripted error responses and shutdown.
        public var script = MockLegacyScript()

        public init() {}
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let state: MockLegacyState
    private let serverIdentity: CertificateIdentity
    /// The CA that issued the gateway's certificate, when the mock made it.
    public let certificateAuthority: MockCertificateAuthority?
    private let channel = Mutex<(any Channel)?>(nil)

    public init(configuration: Configuration = Configuration(), eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.configuration = configuration
        group = eventLoopGroup
        state = MockLegacyState(script: configuration.script, recordLimit: configuration.recordLimit)
        (serverIdentity, certificateAuthority) = try MockListener.identity(configuration.tlsIdentity)
    }

    /// Binds and starts serving.
    public func start() async throws {
        let sslContext = try MockListener.tlsContext(identity: serverIdentity, clientCertificateAuthorities: configuration.clientCertificateAuthorities)
        let state = self.state
        let bound = try await MockListener.bind(host: configuration.host, port: configuration.port, group: group, sslContext: sslContext) { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ByteToMessageHandler(LegacyFrameDecoder()))
            try sync.addHandler(MockLegacyGatewayHandler(state: state))
        }
        channel.withLock { $0 = bound }
    }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        let bound = channel.withLock { channel -> (any Channel)? in
            defer { channel = nil }
            return channel
        }
        try await bound?.close()
        for connection in state.openConnections { connection.close(promise: nil) }
    }

    /// Answers status 10 (shutdown) on every open connection, naming the last notification each
    /// accepted, and closes them, as APNs did for maintenance.
    public func sendShutdown() {
        for connection in state.openConnections {
            connection.pipeline.fireUserInboundEventTriggered(MockLegacyShutdownEvent())
        }
    }

    /// The port it listens on (after ``start()``).
    public var port: Int {
        channel.withLock { $0?.localAddress?.port } ?? configuration.port
    }

    /// Where clients send.
    public var endpoint: LegacyEndpoint { LegacyEndpoint(host: configuration.host, port: port) }

    /// The CA certificate clients must trust, for NIOSSL trust roots (empty when a certificate was given).
    public var trustRoots: [NIOSSLCertificate] {
        (try? certificateAuthority?.tlsCertificate).map { [$0] } ?? []
    }

    // MARK: Inspection

    /// Notifications received and parsed (accepted or answered with a scripted status).
    public var receivedCount: Int { state.receivedCount }
    /// Notifications accepted (exact, whatever the record limit).
    public var acceptedCount: Int { state.acceptedCount }
    /// Status 10 (shutdown) responses sent.
    public var shutdownResponseCount: Int { state.shutdownResponseCount }
    /// Error responses for notifications, counted by status (shutdown responses are not counted here).
    public var rejectionsByStatus: [LegacyStatus: Int] {
        Dictionary(uniqueKeysWithValues: state.rejectedByStatus.map { (LegacyStatus(rawValue: $0.key), $0.value) })
    }
    /// The first accepted notifications, up to the record limit.
    public var accepted: [LegacyFrame] { state.acceptedFrames }
    /// The first error responses, up to the record limit.
    public var rejections: [MockLegacyRejection] { state.rejections }
    /// Connections accepted.
    public var connectionCount: Int { state.connectionCount }

    /// The current script.
    public var script: MockLegacyScript { state.script }

    /// Changes the script while the gateway runs.
    public func updateScript(_ body: (inout MockLegacyScript) -> Void) {
        state.updateScript(body)
    }
}
