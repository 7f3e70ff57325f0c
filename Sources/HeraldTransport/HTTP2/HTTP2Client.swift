import HeraldCore
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Herald's HTTP/2 client, which belongs to no platform: a pool of TLS connections to one
/// server, agreed to HTTP/2 by ALPN, that carries any platform's requests (``HTTP2Job``) under
/// that platform's rules (``HTTP2Rules``). The APNs client sends notifications through it, and
/// the Web Push and FCM clients their messages (``HTTP2ExchangeClient``). A server that does not
/// agree to HTTP/2 fails its requests with ``TransportError/Code/http2NotOffered``, for a client
/// that can speak HTTP/1.1 to fall back on.
package final class HTTP2Client: Sendable {
    /// Where to connect, how many connections and streams, and how long things may take.
    package struct Configuration: Sendable {
        package var host: String
        package var port: Int
        /// The platform, for metrics labels (`apns`, `webpush`, `fcm`).
        package var platform: String
        /// The server's kind, for log messages: "APNs sent GOAWAY". By default the platform's label.
        package var name: String
        /// TLS as the platform wants it (trusted roots, a client certificate); the client sets
        /// ALPN `h2` and TLS 1.2 at least.
        package var tls: TLSConfiguration
        package var maximumConnections = 4
        /// Streams this side opens at most on one connection, whatever the server allows.
        package var streamsPerConnection = 250
        /// Streams after which a connection is replaced (client stream IDs end at 2^31-1).
        package var maximumStreamsPerConnectionLifetime = 1_000_000_000
        /// Age after which a connection is replaced; `nil` keeps it as long as it works.
        package var maximumConnectionAge: TimeAmount?
        package var reconnectInitialBackoff: TimeAmount = .milliseconds(100)
        package var reconnectMaximumBackoff: TimeAmount = .seconds(10)
        /// Consecutive failed connection attempts, with no connection up, after which queued
        /// requests fail instead of waiting.
        package var maximumConnectAttempts = 5
        /// TCP connect, and the limit for TLS and HTTP/2 setup.
        package var connectTimeout: TimeAmount = .seconds(10)
        /// How long one attempt waits for its answer, counted from when it is queued.
        package var requestTimeout: TimeAmount = .seconds(15)
        package var idlePingInterval: TimeAmount = .seconds(60)
        package var responseOverdueAfter: TimeAmount = .seconds(3)
        package var pingTimeout: TimeAmount = .seconds(5)
        /// An HTTP proxy to tunnel through with `CONNECT`: host, port, `Proxy-Authorization`.
        package var proxy: (host: String, port: Int, authorization: String?)?
        /// Decides, per resolved address, whether a connection may be opened; `nil`: any.
        package var connectGuard: ConnectGuard?
        /// Where the transport's counters go; `nil`: nowhere.
        package var metrics: TransportMetrics?

        package init(host: String, port: Int, platform: String, tls: TLSConfiguration = .makeClientConfiguration()) {
            self.host = host
            self.port = port
            self.platform = platform
            self.name = platform
            self.tls = tls
        }

        /// `host:port` as in `:authority`, with an IPv6 address in brackets.
        package var authority: String {
            (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        }
    }

    package let configuration: Configuration
    private let pool: ConnectionPool

    /// A client for `configuration` under `rules`.
    ///
    /// - Throws: ``TransportError/Code/tlsFailed`` when the TLS configuration cannot be built.
    package init(configuration: Configuration, rules: any HTTP2Rules, eventLoopGroup: any EventLoopGroup, logger: Logger) throws(TransportError) {
        self.configuration = configuration
        var tls = configuration.tls
        tls.minimumTLSVersion = .tlsv12
        // A server this side closes gets a second to answer close_notify, not five: one that
        // floods instead is only read (and dropped) that long.
        tls.shutdownTimeout = .seconds(1)
        tls.applicationProtocols = ["h2"]
        let sslContext: NIOSSLContext
        do {
            sslContext = try NIOSSLContext(configuration: tls)
        } catch {
            throw TransportError(.tlsFailed, "the TLS configuration could not be built: \(error)")
        }
        let stateConfiguration = ConnectionStateMachine<any HTTP2Job>.Configuration(
            authority: configuration.authority,
            connectTimeout: configuration.connectTimeout,
            maximumStreams: configuration.streamsPerConnection,
            requestTimeout: configuration.requestTimeout,
            idlePingInterval: configuration.idlePingInterval,
            responseOverdueAfter: configuration.responseOverdueAfter,
            pingTimeout: configuration.pingTimeout,
            maximumStreamsPerConnection: configuration.maximumStreamsPerConnectionLifetime,
            maximumAge: configuration.maximumConnectionAge
        )
        let shortest = [configuration.requestTimeout, configuration.pingTimeout, configuration.responseOverdueAfter, configuration.idlePingInterval].min()!
        let tick: TimeAmount = min(max(TimeAmount.nanoseconds(shortest.nanoseconds / 4), .milliseconds(10)), .seconds(1))
        let metrics = configuration.metrics ?? .none
        let group = eventLoopGroup
        pool = ConnectionPool(
            configuration: .init(
                maximumConnections: configuration.maximumConnections,
                reconnectInitialBackoff: configuration.reconnectInitialBackoff,
                reconnectMaximumBackoff: configuration.reconnectMaximumBackoff,
                maximumConnectAttempts: configuration.maximumConnectAttempts,
                requestTimeout: configuration.requestTimeout,
                authority: configuration.authority,
                name: configuration.name
            ),
            rules: rules,
            group: eventLoopGroup,
            logger: logger
        ) { id, pool in
            let shared = ConnectionHandler.Shared(
                pool: pool, authority: configuration.authority, name: configuration.name, rules: rules, metrics: metrics,
                stateConfiguration: stateConfiguration, tickInterval: tick
            )
            Self.openConnection(id: id, shared: shared, configuration: configuration, sslContext: sslContext, eventLoop: group.next())
        }
    }

    /// Queues requests for sending. Returns false (and queues nothing) after shutdown began.
    package func submit(_ jobs: [any HTTP2Job]) -> Bool {
        pool.submit(jobs)
    }

    /// Stops taking requests, waits until every one in flight has its outcome (retries
    /// included), then closes the connections.
    package func shutdown() async {
        await pool.shutdown()
    }

    /// Whether ``shutdown()`` has begun.
    package var isShuttingDown: Bool { pool.isShuttingDown }

    /// Connections open or opening now.
    package var connectionCount: Int { pool.connectionCount }

    // MARK: Connections

    private static func openConnection(
        id: Int, shared: ConnectionHandler.Shared, configuration: Configuration, sslContext: NIOSSLContext, eventLoop: any EventLoop
    ) {
        let host = configuration.host
        let serverHostname = IPAddressText.isAddress(host) ? nil : host
        let authority = configuration.authority
        let proxy = configuration.proxy
        let connectGuard = configuration.connectGuard
        let connectTimeout = configuration.connectTimeout
        let addProtocol: @Sendable (any Channel) throws -> Void = { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
            try sync.addHandler(ConnectionHandler(id: id, shared: shared))
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let connectGuard { try channel.pipeline.syncOperations.addHandler(ConnectGuardHandler(host: proxy?.host ?? host, connectGuard)) }
                    if let proxy {
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectProxyHandler(
                                target: authority, authorization: proxy.authorization, timeout: connectTimeout, established: addProtocol,
                                failed: { why in shared.pool.connectionFailed(id, error: TransportError(.connectionFailed, "proxy \(proxy.host):\(proxy.port): \(why)")) }
                            )
                        )
                    } else {
                        try addProtocol(channel)
                    }
                }
            }
            .connect(host: proxy?.host ?? host, port: proxy?.port ?? configuration.port)
            .whenFailure { error in
                if let refused = ConnectionNotAllowed.find(in: error) {
                    shared.pool.connectionFailed(id, error: TransportError(.addressNotAllowed, refused.reason))
                    return
                }
                let target = proxy.map { "proxy \($0.host):\($0.port)" } ?? authority
                shared.pool.connectionFailed(id, error: TransportError(.connectionFailed, "cannot connect to \(target): \(error)"))
            }
    }
}
