import HeraldIdentity
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Reads the legacy feedback service (apns-spec §4.6): the tokens whose app is gone, each with
/// the time APNs found out. Connect with the push certificate, send nothing, read until the
/// service closes.
///
/// The service clears its list as it is read, so whatever has been read is returned, even when
/// the service does not close (see ``timeout``). Drop a token only if the device has not
/// registered it again after the tuple's timestamp.
public struct LegacyFeedbackReader: Sendable {
    /// The feedback service, e.g. ``LegacyEndpoint/productionFeedback``.
    public var service: LegacyEndpoint
    /// The push certificate, the same as for sending.
    public var identity: CertificateIdentity
    /// Which certificate authorities are trusted for the service's certificate.
    public var trustRoots: TrustRoots = .system
    /// How long to read before closing the connection ourselves, for services that never close.
    /// Default 60 s.
    public var timeout: Duration = .seconds(60)
    /// TCP connect and TLS handshake limit. Default 10 s.
    public var connectTimeout: Duration = .seconds(10)

    public init(service: LegacyEndpoint, identity: CertificateIdentity) {
        self.service = service
        self.identity = identity
    }

    /// Connects, reads every tuple until the service closes (or ``timeout`` passes) and returns
    /// them in the order received.
    ///
    /// - Throws: ``LegacyError`` `connectionFailed` when the service cannot be reached, TLS fails,
    ///   or it ends the connection with an error before sending anything (a refused client
    ///   certificate shows this way with TLS 1.3). Nothing was read then, so nothing is lost.
    public func read(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.feedback", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> [FeedbackTuple] {
        let sslContext = try LegacyTLS.context(trustRoots: trustRoots, identity: identity)
        let eventLoop = eventLoopGroup.next()
        let promise = eventLoop.makePromise(of: [FeedbackTuple].self)
        let service = self.service
        let serverHostname = (try? SocketAddress(ipAddress: service.host, port: 0)) == nil ? service.host : nil
        let timeout = TimeAmount(self.timeout)
        let connectTimeout = TimeAmount(self.connectTimeout)
        ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try sync.addHandler(ByteToMessageHandler(FeedbackTupleDecoder()))
                    try sync.addHandler(
                        FeedbackCollector(promise: promise, service: service, timeout: timeout, connectTimeout: connectTimeout, logger: logger)
                    )
                }
            }
            .connect(host: service.host, port: service.port)
            .whenFailure { error in
                promise.fail(LegacyError(.connectionFailed, "cannot connect to the feedback service \(service): \(error)"))
            }
        return try await promise.futureResult.get()
    }
}

/// Gathers tuples until the connection ends, then completes the read with them.
private final class FeedbackCollector: ChannelInboundHandler {
    typealias InboundIn = FeedbackTuple

    private let promise: EventLoopPromise<[FeedbackTuple]>
    private let service: LegacyEndpoint
    private let timeout: TimeAmount
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private var tuples: [FeedbackTuple] = []
    private var handshakeDone = false
    private var failure: String?
    private var timer: Scheduled<Void>?
    private var timedOut = false

    init(promise: EventLoopPromise<[FeedbackTuple]>, service: LegacyEndpoint, timeout: TimeAmount, connectTimeout: TimeAmount, logger: Logger) {
        self.promise = promise
        self.service = service
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: connectTimeout) {
            let (collector, context) = loopBound.value
            guard !collector.handshakeDone else { return }
            collector.failure = "TLS with \(collector.service) did not complete within \(collector.connectTimeout.nanoseconds / 1_000_000) ms"
            context.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            handshakeDone = true
            timer?.cancel()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                let (collector, context) = loopBound.value
                collector.timedOut = true
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        tuples.append(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A service that closes TCP without TLS close_notify has still said all it had.
        if failure == nil, (error as? NIOSSLError) != .uncleanShutdown { failure = "\(error)" }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        if !handshakeDone {
            promise.fail(LegacyError(.connectionFailed, "the feedback service \(service) closed before TLS was established: \(failure ?? "no reason given"); check its address, its certificate and the client certificate"))
        } else if let failure, tuples.isEmpty, !timedOut {
            // With TLS 1.3 a refused client certificate shows only after the handshake.
            promise.fail(LegacyError(.connectionFailed, "the feedback service \(service) ended the connection with an error before sending anything: \(failure); check the client certificate"))
        } else {
            if timedOut {
                logger.info("the feedback service did not close; returning what was read", metadata: ["tuples": "\(tuples.count)"])
            } else if let failure {
                // What was read is returned: the service has already cleared it.
                logger.warning("the feedback stream ended badly; returning the complete tuples", metadata: ["tuples": "\(tuples.count)", "error": "\(failure)"])
            }
            promise.succeed(tuples)
        }
        context.fireChannelInactive()
    }
}
