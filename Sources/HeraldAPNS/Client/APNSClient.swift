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
    private let pool: HTTP2Client
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
        configuration.trustRoots.apply(to: &tls)
        switch configuration.credentials {
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

        let environment = configuration.environment
        var transport = HTTP2Client.Configuration(host: environment.host, port: environment.port, platform: "apns", tls: tls)
        transport.name = "APNs"
        transport.maximumConnections = configuration.pool.maximumConnections
        transport.streamsPerConnection = configuration.pool.streamsPerConnection
        transport.maximumStreamsPerConnectionLifetime = configuration.pool.maximumStreamsPerConnectionLifetime
        transport.maximumConnectionAge = configuration.pool.maximumConnectionAge.map { .init($0) }
        transport.reconnectInitialBackoff = .init(configuration.pool.reconnectInitialBackoff)
        transport.reconnectMaximumBackoff = .init(configuration.pool.reconnectMaximumBackoff)
        transport.maximumConnectAttempts = configuration.pool.maximumConnectAttempts
        transport.connectTimeout = .init(configuration.timeouts.connect)
        transport.requestTimeout = .init(configuration.timeouts.request)
        transport.idlePingInterval = .init(configuration.liveness.idlePingInterval)
        transport.responseOverdueAfter = .init(configuration.liveness.responseOverdueAfter)
        transport.pingTimeout = .init(configuration.liveness.pingTimeout)
        transport.proxy = configuration.proxy.map { ($0.host, $0.port, $0.authorization) }
        let metrics = ClientMetrics(configuration.metrics)
        transport.metrics = metrics.transport
        let rules = APNSRules(
            issuer: issuer, decider: RetryDecider(policy: configuration.retry, usesProviderTokens: issuer != nil), metrics: metrics
        )
        do {
            pool = try HTTP2Client(configuration: transport, rules: rules, eventLoopGroup: eventLoopGroup, logger: logger)
        } catch {
            throw APNSClientError(error)
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
            if !pool.submit([job]) {
                continuation.resume(throwing: APNSClientError(.shutdown, "the client is shutting down"))
            }
        }
    }

    /// Sends a channel-management or broadcast request through the same pool, bound and retries.
    func perform(_ request: OtherRequest, logger base: Logger? = nil) async throws -> RawResponse {
        _ = try await limiter.acquire()
        defer { limiter.release() }
        let logger = base ?? self.logger
        return try await withCheckedThrowingContinuation { continuation in
            let job = RequestJob(other: request, completion: continuation, logger: logger)
            if !pool.submit([job]) {
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
        if !pool.submit(jobs.map { $0 as any HTTP2Job }) {
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
}
