import HeraldTransport
import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldIdentity
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Sends notifications to APNs over HTTP/2 and TLS.
///
/// One client holds a pool of connections to one environment with one credential. It bounds the
/// notifications in flight (``Configuration/Pool-swift.struct/maximumInFlight``): `send` suspends at the bound. Every
/// notification ends with exactly one outcome: accepted, rejected with its APNs reason, or failed
/// with the reason it could not be delivered.
///
/// Shut it down with ``shutdown()``, or use ``withAPNSClient(configuration:eventLoopGroup:logger:_:)``,
/// or run it as a swift-service-lifecycle `Service`.
public final class APNSClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: Configuration
    private let pool: ConnectionPool
    private let limiter: InFlightLimiter
    private let logger: Logger
    private let issuer: ProviderTokenIssuer?
    private let identity: CertificateIdentity?

    /// A client for `configuration`.
    ///
    /// - Parameters:
    ///   - eventLoopGroup: where connections run; the shared NIO group by default.
    ///   - logger: the background logger, for connection events. Per-notification logging uses the
    ///     logger given to `send`. Secrets are never logged.
    /// - Throws: ``APNSClientError``: ``APNSClientError/Code/invalidConfiguration`` when a field is
    ///   out of range (``Configuration/validate()``), ``APNSClientError/Code/tlsFailed`` when the TLS
    ///   configuration cannot be built.
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.apns", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.limiter = InFlightLimiter(limit: configuration.pool.maximumInFlight)

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12  // apns-spec §1.2
        // A server this side closes gets a second to answer close_notify, not five: one that
        // floods instead is only read (and dropped) that long.
        tls.shutdownTimeout = .seconds(1)
        tls.applicationProtocols = ["h2"]
        configuration.trustRoots.apply(to: &tls)
        switch configuration.sendsCredentials ? configuration.credentials : nil {
        case nil:
            issuer = nil
            identity = nil
        case .providerToken(let key):
            issuer = ProviderTokenIssuer.shared(for: key)
            identity = nil
        case .providerTokens(let given):
            issuer = given
            identity = nil
        case .certificate(let certificate):
            issuer = nil
            identity = certificate
            certificate.apply(to: &tls)
        }
        let sslContext: NIOSSLContext
        do {
            sslContext = try NIOSSLContext(configuration: tls)
        } catch {
            throw APNSClientError(.tlsFailed, "the TLS configuration could not be built: \(error)")
        }

        let environment = configuration.environment
        let connectTimeout = TimeAmount(configuration.timeouts.connect)
        let stateConfiguration = ConnectionStateMachine<RequestJob>.Configuration(
            authority: environment.authority,
            connectTimeout: connectTimeout,
            maximumStreams: configuration.pool.streamsPerConnection,
            requestTimeout: .init(configuration.timeouts.request),
            idlePingInterval: .init(configuration.liveness.idlePingInterval),
            responseOverdueAfter: .init(configuration.liveness.responseOverdueAfter),
            pingTimeout: .init(configuration.liveness.pingTimeout),
            maximumStreamsPerConnection: configuration.pool.maximumStreamsPerConnectionLifetime,
            maximumAge: configuration.pool.maximumConnectionAge.map { .init($0) }
        )
        let liveness = configuration.liveness
        let shortest = [configuration.timeouts.request, liveness.pingTimeout, liveness.responseOverdueAfter, liveness.idlePingInterval].min()!
        let tick = TimeAmount(min(max(shortest / 4, .milliseconds(10)), .seconds(1)))
        let decider = RetryDecider(policy: configuration.retry, usesProviderTokens: issuer != nil)
        let metrics = ClientMetrics(configuration.metrics)
        let issuer = self.issuer
        let proxy = configuration.proxy
        let connectGuard = configuration.connectGuard
        let group = eventLoopGroup

        pool = ConnectionPool(
            configuration: .init(
                maximumConnections: configuration.pool.maximumConnections,
                reconnectInitialBackoff: .init(configuration.pool.reconnectInitialBackoff),
                reconnectMaximumBackoff: .init(configuration.pool.reconnectMaximumBackoff),
                maximumConnectAttempts: configuration.pool.maximumConnectAttempts,
                requestTimeout: .init(configuration.timeouts.request),
                authority: environment.authority
            ),
            group: eventLoopGroup,
            logger: logger
        ) { id, pool in
            let shared = ConnectionHandler.Shared(
                pool: pool, authority: environment.authority, issuer: issuer, decider: decider, metrics: metrics,
                stateConfiguration: stateConfiguration, tickInterval: tick
            )
            Self.openConnection(
                id: id, shared: shared, environment: environment, proxy: proxy, connectGuard: connectGuard, sslContext: sslContext,
                connectTimeout: connectTimeout, eventLoop: group.next()
            )
        }
    }

    // MARK: Sending

    /// Sends one notification and waits for its outcome, retrying by reason (apns-spec §1.7).
    ///
    /// Suspends first while ``Configuration/Pool-swift.struct/maximumInFlight`` notifications are in flight.
    ///
    /// - Returns: the apns-id (and, in the development environment, the apns-unique-id).
    /// - Throws: ``APNSError`` when APNs rejected it, or when local validation refused it with the
    ///   reason APNs would give; ``APNSClientError`` when it could not be delivered.
    public func send(_ notification: PushNotification, logger: Logger? = nil) async throws -> APNSResponse {
        var prepared = notification
        var validated: PushHeaders?  // one notification: no headers shared with others
        try prepare(&prepared, validated: &validated)
        _ = try await limiter.acquire()
        defer { limiter.release() }
        let logger = self.logger(for: prepared, base: logger)
        return try await withCheckedThrowingContinuation { continuation in
            let job = RequestJob(notification: prepared, index: 0, completion: .single(continuation), logger: logger)
            if !pool.submit(CollectionOfOne(job)) {
                continuation.resume(throwing: APNSClientError(.shutdown, "the client is shutting down"))
            }
        }
    }

    /// A request of another protocol than APNs sent over this client's HTTP/2 pool (Web Push,
    /// FCM): its answer is the caller's whatever its status.
    package struct Exchange: Sendable {
        var request: OtherRequest

        /// A request with its own header list.
        package init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]?) {
            request = OtherRequest(method: method, path: path, headers: headers, body: body, expiration: nil)
        }

        /// A request with a head it shares with others (FCM's `messages:send`): no header list is
        /// made for each.
        package init(_ head: SharedRequestHead, body: [UInt8]) {
            request = OtherRequest(method: head.method, path: head.path, headers: [], body: body, expiration: nil, sharedHead: head)
        }
    }

    /// Sends `exchange` through the pool and returns its answer whatever the status. A lost
    /// stream or a timeout throws ``APNSClientError``. Use a client made with
    /// ``Configuration/sendsCredentials`` off.
    package func exchange(_ exchange: Exchange, logger: Logger? = nil) async throws -> HTTPAnswer {
        var request = exchange.request
        request.passthrough = true
        let answer = try await perform(request, logger: logger)
        return HTTPAnswer(status: answer.status, location: answer.location, retryAfter: answer.retryAfter, body: answer.body)
    }

    /// Sends every one of `exchanges` through the pool at once (as many as the in-flight bound
    /// lets at a time) and returns each answer, in order, whatever its status: one wake of the
    /// connections per group rather than per request. A lost stream or a timeout is that
    /// request's ``APNSClientError``.
    package func exchange(_ exchanges: [Exchange], logger base: Logger? = nil) async -> [Result<HTTPAnswer, any Error>] {
        await exchange(count: exchanges.count, logger: base) { exchanges[$0].request }
    }

    /// Requests `0..<count` (made by `request`, passed through) sent together.
    private func exchange(
        count: Int, logger base: Logger?, request: (Int) -> OtherRequest
    ) async -> [Result<HTTPAnswer, any Error>] {
        guard count > 0 else { return [] }
        let logger = base ?? self.logger
        let batch = ExchangeBatch(count: count, limiter: limiter)
        var next = 0
        while next < count {
            let granted: Int
            do {
                granted = try await limiter.acquire(maximum: count - next)
            } catch {
                for index in next..<count { batch.deliver(.failure(error), at: index, holdsPermit: false) }
                break
            }
            let jobs = (next..<(next + granted)).map { index in
                var other = request(index)
                other.passthrough = true
                return RequestJob(other: other, batch: batch, index: index, logger: logger)
            }
            if !pool.submit(jobs) {
                for job in jobs { job.complete(.failed(APNSClientError(.shutdown, "the client is shutting down"))) }
            }
            next += granted
        }
        return await batch.wait().map { answer in answer.map { HTTPAnswer(status: $0.status, location: $0.location, retryAfter: $0.retryAfter, body: $0.body) } }
    }

    /// Sends a channel-management or broadcast request through the same pool, bound and retries.
    func perform(_ request: OtherRequest, logger base: Logger? = nil) async throws -> RawResponse {
        _ = try await limiter.acquire()
        defer { limiter.release() }
        let logger = base ?? self.logger
        return try await withCheckedThrowingContinuation { continuation in
            let job = RequestJob(other: request, completion: continuation, logger: logger)
            if !pool.submit(CollectionOfOne(job)) {
                continuation.resume(throwing: APNSClientError(.shutdown, "the client is shutting down"))
            }
        }
    }

    /// Sends every notification of a (possibly huge) sequence and yields exactly one final outcome
    /// per notification, in the order they complete, keeping up to the in-flight bound busy.
    ///
    /// Sending starts when iteration starts and proceeds as fast as outcomes are taken: memory
    /// stays flat whatever the number of notifications. Stopping the iteration early stops sending
    /// more (those already sent still finish).
    public func send<Notifications: Sequence & Sendable>(
        contentsOf notifications: Notifications, logger: Logger? = nil
    ) -> APNSBulkSend where Notifications.Element == PushNotification {
        APNSBulkSend(limiter: limiter) { [self] sink in
            await produce(fromSequence: notifications, into: sink, logger: logger)
        }
    }

    /// Sends every notification of an async sequence; see ``send(contentsOf:logger:)-(Sequence,_)``.
    public func send<Notifications: AsyncSequence & Sendable>(
        contentsOf notifications: Notifications, logger: Logger? = nil
    ) -> APNSBulkSend where Notifications.Element == PushNotification {
        APNSBulkSend(limiter: limiter) { [self] sink in
            await produce(from: notifications, into: sink, logger: logger)
        }
    }

    // The gateway and `herald bench` send arrays: a copy specialised for them, so the producer's
    // per-notification loop does not run through the generic sequence's witnesses.
    @_specialize(where Notifications == [PushNotification])
    private func produce<Notifications: Sequence>(
        fromSequence notifications: Notifications, into sink: BulkSink<APNSOutcome>, logger base: Logger?
    ) async where Notifications.Element == PushNotification {
        var validated: PushHeaders?
        await BulkProducer.run(
            notifications, limiter: limiter, sink: sink,
            prepare: { prepared($0, index: $1, validated: &validated, sink: sink, logger: base) },
            submit: submitBulk
        )
    }

    private func produce<Notifications: AsyncSequence>(
        from notifications: Notifications, into sink: BulkSink<APNSOutcome>, logger base: Logger?
    ) async where Notifications.Element == PushNotification {
        var validated: PushHeaders?
        await BulkProducer.run(
            notifications, limiter: limiter, sink: sink,
            prepare: { prepared($0, index: $1, validated: &validated, sink: sink, logger: base) },
            submit: submitBulk
        )
    }

    private func submitBulk(_ jobs: [RequestJob]) {
        if !pool.submit(jobs) {
            for job in jobs { job.complete(.failed(APNSClientError(.shutdown, "the client is shutting down"))) }
        }
    }

    /// A job for `notification`, or its outcome when it is refused before sending. Takes the
    /// notification, not a copy: the job holds it (each copy retains its strings).
    private func prepared(
        _ notification: consuming PushNotification, index: Int, validated: inout PushHeaders?, sink: BulkSink<APNSOutcome>, logger base: Logger?
    ) -> BulkPreparation<RequestJob, APNSOutcome> {
        do {
            try prepare(&notification, validated: &validated)
            let logger = logger(for: notification, base: base)
            return .job(RequestJob(notification: notification, index: index, completion: .bulk(sink), logger: logger))
        } catch {
            let result: APNSOutcome.Result = (error as? APNSError).map { .rejected($0) }
                ?? .failed(error as? APNSClientError ?? APNSClientError(.invalidCredentials, "\(error)"))
            return .refused(APNSOutcome(notification: notification, index: index, result: result, attempts: 0))
        }
    }

    /// Local checks before anything is sent: APNs's own rules (``PushNotification/validate()``)
    /// and what the credentials allow. In place: a notification returned as a new value was a
    /// copy of it, a retain of each of its strings (and a release of the old), per notification.
    /// A notification refused is left as it came (its outcome carries it).
    ///
    /// `validated` is the last headers of a bulk send that passed ``PushHeaders/validate()``:
    /// the notifications after it that share them, the very same fields object (the usual bulk
    /// send, and every batch of a gateway's broadcast), are not checked again. That object never
    /// changes, so they would pass again; the payload's size is checked for each.
    private func prepare(_ notification: inout PushNotification, validated: inout PushHeaders?) throws {
        if let identity {
            if notification.headers.pushType == .location {
                throw APNSClientError(.invalidCredentials, "location pushes need token authentication, not a certificate (apns-spec §1.5)")
            }
            if notification.headers.topic == nil {
                guard let topic = identity.defaultTopic else {
                    throw APNSError(local: .missingTopic, "the certificate lists several topics (\(identity.listedTopics.joined(separator: ", "))); set apns-topic")
                }
                var withTopic = notification
                withTopic.headers.topic = topic
                try withTopic.validate()
                notification = withTopic
                return
            }
        } else if notification.headers.topic == nil {
            throw APNSError(local: .missingTopic, "token authentication needs apns-topic: the app's bundle ID")
        }
        if let validated, validated.isSameInstance(as: notification.headers) {
            try notification.validatePayloadSize()
            return
        }
        try notification.validate()
        validated = notification.headers
    }

    private func logger(for notification: PushNotification, base: Logger?) -> Logger {
        var logger = base ?? self.logger
        if let apnsID = notification.headers.apnsID {
            logger[metadataKey: "apns-id"] = "\(apnsID.uuidString.lowercased())"
        }
        return logger
    }

    // MARK: Shutdown

    /// Stops taking notifications, waits until every one in flight has its outcome (retries
    /// included), then closes the connections. Sends after this fail with
    /// ``APNSClientError/Code/shutdown``.
    public func shutdown() async {
        await pool.shutdown()
    }

    /// Connections open or opening now.
    public var connectionCount: Int { pool.connectionCount }

    /// Callers suspended in a send now, waiting for room under
    /// ``Configuration/Pool-swift.struct/maximumInFlight``: a gauge of back-pressure.
    public var waitingSends: Int { limiter.waiting }

    // MARK: Connections

    private static func openConnection(
        id: Int, shared: ConnectionHandler.Shared, environment: APNSEnvironment, proxy: Proxy?, connectGuard: ConnectGuard?,
        sslContext: NIOSSLContext, connectTimeout: TimeAmount, eventLoop: any EventLoop
    ) {
        let host = environment.host
        let serverHostname = IPAddressText.isAddress(host) ? nil : host
        let authority = environment.authority
        let addProtocol: @Sendable (any Channel) throws -> Void = { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
            try sync.addHandler(ConnectionHandler(id: id, shared: shared))
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let connectGuard { try channel.pipeline.syncOperations.addHandler(ConnectGuardHandler(host: proxy?.host ?? host, connectGuard)) }
                    if let proxy {
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectProxyHandler(
                                target: authority, authorization: proxy.authorization, timeout: connectTimeout, established: addProtocol,
                                failed: { why in shared.pool.connectionFailed(id, error: APNSClientError(.connectionFailed, "proxy \(proxy.host):\(proxy.port): \(why)")) }
                            )
                        )
                    } else {
                        try addProtocol(channel)
                    }
                }
            }
            .connect(host: proxy?.host ?? host, port: proxy?.port ?? environment.port)
            .whenFailure { error in
                if let refused = ConnectionNotAllowed.find(in: error) {
                    shared.pool.connectionFailed(id, error: APNSClientError(.addressNotAllowed, refused.reason))
                    return
                }
                let target = proxy.map { "proxy \($0.host):\($0.port)" } ?? authority
                shared.pool.connectionFailed(id, error: APNSClientError(.connectionFailed, "cannot connect to \(target): \(error)"))
            }
    }

}
