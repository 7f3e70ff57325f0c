import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldIdentity
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Sends notifications over the legacy binary interface (apns-spec §4): one TLS connection with a
/// client certificate to a gateway, frames batched into large writes, and error recovery that
/// sends again what the gateway discarded after a failing notification.
///
/// The interface answers only on error, so a notification is accepted once
/// ``Configuration/settleInterval`` has passed without an error response for it. Every
/// notification ends with exactly one outcome: accepted, rejected with the gateway's status, or
/// failed with the reason, ``LegacyError/Code/possiblyLost`` included. Nothing is dropped silently.
///
/// Shut it down with ``shutdown()`` (which writes what is batched and waits for every outcome),
/// or use ``withLegacyClient(configuration:eventLoopGroup:logger:_:)``, or run it as a
/// swift-service-lifecycle `Service`.
public final class LegacyClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: Configuration
    private let limiter: InFlightLimiter
    private let driver: NIOLoopBoundBox<LegacyConnectionDriver>
    private let eventLoop: any EventLoop

    /// A client for `configuration`; it connects when the first notification is sent.
    ///
    /// - Parameters:
    ///   - eventLoopGroup: where the connection runs; the shared NIO group by default.
    ///   - logger: for connection events and recovery warnings. Secrets are never logged.
    /// - Throws: ``LegacyError`` `connectionFailed` when the TLS configuration cannot be built.
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.legacy", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        self.configuration = configuration
        limiter = InFlightLimiter(limit: configuration.maximumInFlight)
        let sslContext = try LegacyTLS.context(trustRoots: configuration.trustRoots, identity: configuration.identity)
        let machine = LegacyStateMachine<LegacyJob>(
            configuration: .init(
                command: configuration.command,
                bufferCapacity: max(1, configuration.bufferCapacity),
                settleInterval: TimeAmount(configuration.settleInterval),
                framingTimeout: TimeAmount(configuration.framingTimeout),
                maximumDrops: max(1, configuration.maximumDrops),
                reconnectInitialBackoff: TimeAmount(configuration.reconnectInitialBackoff),
                reconnectMaximumBackoff: TimeAmount(configuration.reconnectMaximumBackoff),
                maximumConnectAttempts: max(1, configuration.maximumConnectAttempts)
            )
        )
        eventLoop = eventLoopGroup.next()
        let connector = LegacyConnectionDriver.Connector(
            host: configuration.gateway.host, port: configuration.gateway.port, sslContext: sslContext,
            connectTimeout: TimeAmount(configuration.connectTimeout)
        )
        var logger = logger
        logger[metadataKey: "gateway"] = "\(configuration.gateway)"
        driver = .makeBoxSendingValue(
            LegacyConnectionDriver(machine: machine, connector: connector, eventLoop: eventLoop, logger: logger), eventLoop: eventLoop
        )
    }

    // MARK: Sending

    /// Sends one notification and waits for its outcome: until ``Configuration/settleInterval``
    /// has passed without an error response for it, or the gateway answered.
    ///
    /// - Throws: ``LegacyError``: `rejected` with the gateway's ``LegacyError/status``,
    ///   `invalidNotification` for a payload over the command's limit, or the reason it could not
    ///   be delivered.
    public func send(_ notification: LegacyNotification) async throws {
        try check(notification)
        _ = try await limiter.acquire()
        defer { limiter.release() }
        let driver = self.driver
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            eventLoop.execute { driver.value.submit([(notification, .single(continuation))]) }
        }
    }

    /// Sends every notification of a (possibly huge) sequence and yields exactly one outcome per
    /// notification, in the order they complete, keeping up to ``Configuration/maximumInFlight``
    /// busy. Sending starts when iteration starts; memory stays flat however many there are.
    /// Stopping the iteration early stops sending more (those already sent still finish).
    public func send<Notifications: Sequence & Sendable>(
        contentsOf notifications: Notifications
    ) -> LegacyBulkSend where Notifications.Element == LegacyNotification {
        LegacyBulkSend(limiter: limiter) { [self] sink in
            await BulkProducer.run(
                notifications, limiter: limiter, sink: sink,
                prepare: { prepared($0, index: $1, sink: sink) }, submit: submit
            )
        }
    }

    /// Sends every notification of an async sequence; see ``send(contentsOf:)-(Sequence)``.
    public func send<Notifications: AsyncSequence & Sendable>(
        contentsOf notifications: Notifications
    ) -> LegacyBulkSend where Notifications.Element == LegacyNotification {
        LegacyBulkSend(limiter: limiter) { [self] sink in
            await BulkProducer.run(
                notifications, limiter: limiter, sink: sink,
                prepare: { prepared($0, index: $1, sink: sink) }, submit: submit
            )
        }
    }

    private func prepared(_ notification: LegacyNotification, index: Int, sink: BulkSink<LegacyOutcome>) -> BulkPreparation<(LegacyNotification, LegacyJob), LegacyOutcome> {
        do {
            try check(notification)
            return .job((notification, .bulk(sink, index: index)))
        } catch {
            return .refused(LegacyOutcome(index: index, token: notification.token, result: .failed(error), attempts: 0))
        }
    }

    private func submit(_ jobs: [(LegacyNotification, LegacyJob)]) {
        let driver = self.driver
        eventLoop.execute { driver.value.submit(jobs) }
    }

    /// The payload limit of the configured command (apns-spec §1.8, §4).
    private func check(_ notification: LegacyNotification) throws(LegacyError) {
        let limit = configuration.command.maximumPayloadSize
        guard notification.payload.count <= limit else {
            throw LegacyError(.invalidNotification, "the payload is \(notification.payload.count) bytes; command \(configuration.command.rawValue) takes at most \(limit) (shorten it, or use LegacyNotification(token:shortening:toFit:))")
        }
    }

    // MARK: Shutdown

    /// Stops taking notifications, writes what is batched, waits until every notification has its
    /// outcome (re-sends included), then closes the connection. Sends after this fail with
    /// ``LegacyError/Code/shutdown``.
    public func shutdown() async {
        let driver = self.driver
        await withCheckedContinuation { continuation in
            eventLoop.execute { driver.value.shutdown(continuation) }
        }
    }
}
