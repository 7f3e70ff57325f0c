import HeraldAPNS
import HeraldCore
import HeraldStore
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import Synchronization

/// A push gateway: the HTTP API, delivery workers, one APNs client per app and the store, run as
/// one swift-service-lifecycle `ServiceGroup`.
///
/// Every notification the API answers 202 for is stored first, so it is delivered at least once
/// whatever happens to the process. Many gateways can share one PostgreSQL database; each claims
/// its share of the work.
///
/// On graceful shutdown (SIGTERM when run by `herald serve`) the API stops first, then the
/// workers finish or give back what they hold, then the clients and the store close.
public final class HeraldGateway: Service, Sendable {
    /// What a process does.
    public struct Roles: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The `/v1` API (probes, metrics and the document are always served).
        public static let api = Roles(rawValue: 1)
        /// Delivery workers and the APNs clients they send through.
        public static let workers = Roles(rawValue: 2)
        public static let all: Roles = [.api, .workers]
    }

    /// The configuration in force: the one it started with, with the apps and API keys of the
    /// last ``reload(_:)``.
    public var configuration: GatewayConfiguration { live.configuration }
    public let roles: Roles
    /// The store the gateway works on.
    public let store: HeraldStore
    /// The API, for tests that drive its router without a socket.
    public let api: GatewayAPI
    /// The apps, API keys and APNs clients in force, replaced by ``reload(_:)``.
    let live: LiveConfiguration
    /// The configuration file's apps and the admin API's, merged into what ``live`` holds.
    let sources: AppSources
    let metrics: GatewayMetrics
    private let logger: Logger
    private let onListening: @Sendable (ListenAddress) async -> Void
    private let stopGrace: Duration

    /// - Parameters:
    ///   - registry: where metrics go; `/metrics` writes it out. Bootstrap swift-metrics with a
    ///     `PrometheusMetricsFactory` on the same registry to see the APNs clients' metrics too.
    ///   - onListening: called with the address the API listens on (the real port when the
    ///     configuration says 0).
    /// - Throws: ``APNSClientError`` when an app's TLS configuration cannot be built.
    public convenience init(
        configuration: GatewayConfiguration, roles: Roles = .all, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        logger: Logger = Logger(label: "herald.gateway", factory: { _ in SwiftLogNoOpLogHandler() }),
        onListening: @escaping @Sendable (ListenAddress) async -> Void = { _ in }
    ) throws {
        try self.init(
            configuration: configuration, roles: roles, registry: registry, logger: logger, stopGrace: configuration.workers.shutdownGrace,
            onListening: onListening
        )
    }

    init(
        configuration: GatewayConfiguration, roles: Roles, registry: PrometheusCollectorRegistry, logger: Logger, stopGrace: Duration,
        onListening: @escaping @Sendable (ListenAddress) async -> Void
    ) throws {
        self.roles = roles
        self.logger = logger
        self.onListening = onListening
        self.stopGrace = stopGrace
        metrics = GatewayMetrics(registry: registry, maximumAppLabels: configuration.metrics.maximumAppLabels)
        store = HeraldStore(configuration: configuration.storeConfiguration, logger: logger)
        for expiry in CredentialExpiry.of(configuration.apps) { metrics.recordCredentialExpiry(expiry) }
        live = LiveConfiguration(configuration: configuration, clients: try GatewayClients.make(configuration, roles: roles, labels: metrics.appLabels, logger: logger))
        store.setWebhookInterest(configuration.webhookInterest)
        sources = AppSources(file: configuration, store: store, logger: logger)
        api = GatewayAPI(live: live, store: store, metrics: metrics, sources: sources)
        sources.attach { [weak self] merged in try await self?.putInForce(merged) ?? [] }
    }

    /// Puts the apps and API keys of `new`, a reading of the configuration file, in force with the
    /// apps and keys defined through the admin API (`herald serve` does on SIGHUP; ``AppSources``).
    ///
    /// - Returns: the settings `new` changes that only a restart applies (they keep their
    ///   running values).
    @discardableResult
    public func reload(_ new: GatewayConfiguration) async throws -> [String] {
        try await sources.update(file: new)
    }

    /// Puts the apps and API keys of `new` in force (the file's merged with the admin API's, by
    /// ``AppSources``, on SIGHUP and as the API's change): new and changed apps, credentials and
    /// keys apply to every batch and request from now on. The clients of apps `new` changes or
    /// removes close once the batches and requests using them are done; every other app keeps
    /// its clients and connections. Nothing queued is lost or sent twice: the queue is in the store.
    ///
    /// - Returns: the settings `new` changes that only a restart applies (they keep their
    ///   running values).
    func putInForce(_ new: GatewayConfiguration) async throws -> [String] {
        let start = ContinuousClock.now
        let changes = live.replace(with: new)
        store.setWebhookInterest(live.configuration.webhookInterest)
        for expiry in CredentialExpiry.of(new.apps) { metrics.recordCredentialExpiry(expiry) }
        let elapsed = ContinuousClock.now - start
        /// Up to 10 IDs of a list, and how many more: a gateway may serve thousands of apps.
        func few(_ ids: [String]) -> String {
            ids.count <= 10 ? ids.joined(separator: ",") : ids.prefix(10).joined(separator: ",") + " and \(ids.count - 10) more"
        }
        logger.info(
            "configuration reloaded",
            metadata: [
                "apps": "\(new.apps.count)", "added": "\(few(changes.added))", "changed": "\(few(changes.changed))",
                "removed": "\(few(changes.removed))", "apiKeys": "\(new.apiKeys.count)", "needsRestart": "\(changes.needsRestart.joined(separator: ","))",
                "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
            ]
        )
        return changes.needsRestart
    }

    /// Reads the API's TLS certificate and key again (`herald serve` does on SIGHUP); handshakes
    /// from now on use them. Does nothing without TLS.
    ///
    /// - Throws: ``APITLSIdentity/LoadError`` when the files cannot be used; the previous
    ///   certificate stays in use.
    public func reloadTLS() throws {
        try configuration.tls?.reload()
    }

    /// Runs until graceful shutdown or cancellation: ``services()`` as one `ServiceGroup`.
    public func run() async throws {
        let group = ServiceGroup(services: services(), gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        try await group.run()
    }

    /// A fresh set of the gateway's services, for one `ServiceGroup` (`herald serve` runs them so, with its
    /// signals): the store (its connections, and on PostgreSQL the listener that wakes idle
    /// workers), one APNs client per app, the delivery workers, the housekeeping (gauges
    /// refreshed, retention purged) and the HTTP API. A group shuts its services down in reverse
    /// order: the API stops taking requests first, the workers then finish what is in flight
    /// through the clients and the store, which close last. The API, the workers and the
    /// housekeeping start once the database is migrated.
    public func services() -> [any Service] {
        let migrated = MigrationGate(gateway: self)
        var services: [any Service] = [store]
        // The APNs clients close after the workers and the API, draining what is in flight.
        services.append(ClientsService(live: live))
        if roles.contains(.workers) {
            let workers = DeliveryWorkers(store: store, live: live, metrics: metrics, logger: logger, stopGrace: stopGrace, receiptKeys: api.receiptKeys)
            services.append(AfterMigration(gate: migrated, service: workers))
        }
        let housekeeping = Housekeeping(
            store: store, settings: configuration.housekeeping, retention: configuration.queue.retention, metrics: metrics, backlog: api.backlog,
            logger: logger, live: live
        )
        services.append(AfterMigration(gate: migrated, service: housekeeping))
        if roles.contains(.workers) {
            let sender = WebhookSender(
                store: store, live: live, metrics: metrics.webhooks, settings: configuration.webhookSender, lease: configuration.queue.lease,
                statisticsInterval: configuration.housekeeping.statisticsInterval, logger: logger
            )
            services.append(AfterMigration(gate: migrated, service: sender))
        }
        // The apps defined through the admin API, read again when another process changes them.
        services.append(AfterMigration(gate: migrated, service: StoredAppsWatcher(sources: sources)))
        services.append(AfterMigration(gate: migrated, service: HTTPService(gateway: self)))
        return services
    }

    /// Closes the APNs, Web Push and FCM clients in force, and any a reload replaced still
    /// draining, on graceful shutdown.
    private struct ClientsService: Service {
        /// How long connections have to close once the workers have stopped.
        static let closeAllowance: Duration = .seconds(2)

        let live: LiveConfiguration

        func run() async throws {
            // Closes the clients idle too long, until the process stops.
            let idle = live.configuration.workers.idleClientTimeout
            let sweep = Task { [live] in
                let interval = max(.milliseconds(250), min(idle / 4, .seconds(15)))
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    live.snapshot.clients.closeIdle()
                }
            }
            try? await gracefulShutdown()
            sweep.cancel()
            // A service group stops its services one at a time, in reverse order: this one is
            // told to stop once the workers (listed after it) have, within their grace period.
            // What was unanswered then is recorded as retried, so a push service or APNs that
            // does not answer must not hold the stop: the clients get `closeAllowance` to close.
            // (It was the grace period again plus the allowance, counted from here: a stop with
            // an unanswered send took 4 s with a 1 s grace, and past `shutdownMargin` with the
            // default 20 s, where the group cancels what is left.)
            let (done, finish) = AsyncStream.makeStream(of: Never.self)
            let closing = Task { [live] in
                await live.shutdown()
                finish.finish()
            }
            let deadline = Task {
                try? await Task.sleep(for: Self.closeAllowance)
                finish.finish()
            }
            for await _ in done {}
            deadline.cancel()
            _ = closing  // left to finish on its own if the deadline passed
        }
    }

    /// The HTTP API (and the probes, metrics and document, whatever the roles).
    private struct HTTPService: Service {
        let gateway: HeraldGateway
        func run() async throws { try await gateway.serveHTTP() }
    }

    /// Runs `service` once the database is migrated.
    private struct AfterMigration: Service {
        let gate: MigrationGate
        let service: any Service

        func run() async throws {
            try await gate.migrated()
            try await service.run()
        }
    }

    /// Migrates once for every service that waits for it: the first to ask runs the migration,
    /// the others wait for its result.
    private final class MigrationGate: Sendable {
        private let gateway: HeraldGateway
        private let task = Mutex<Task<Void, any Error>?>(nil)

        init(gateway: HeraldGateway) { self.gateway = gateway }

        func migrated() async throws {
            let running = task.withLock { task in
                if let task { return task }
                let gateway = self.gateway
                let started = Task { try await gateway.migrate() }
                task = started
                return started
            }
            try await withTaskCancellationHandler {
                try await running.value
            } onCancel: {
                running.cancel()
            }
        }
    }

    /// Migrates, waiting up to a minute for a database that is starting too.
    private func migrate() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var attempt = 0
        while true {
            do {
                try await store.migrate()
                // The API's apps are in force before the API and the workers start.
                await sources.prepareAtStart()
                return
            } catch let error as StoreError where error.code == .unavailable && ContinuousClock.now < deadline {
                attempt += 1
                if attempt == 1 { logger.warning("the database cannot be reached yet; retrying", metadata: ["error": "\(error)"]) }
                try await Task.sleep(for: .milliseconds(min(2000, 100 << min(attempt, 5))))
            }
        }
    }

    private func serveHTTP() async throws {
        let listen = configuration.listen
        let onListening = self.onListening
        let logger = self.logger
        let limits = configuration.limits
        let addresses = ConnectionsPerAddress()
        let http1 = HTTPServerBuilder.http1(configuration: .init(
            additionalChannelHandlers: [ConnectionGuard(limits: limits, addresses: addresses)], idleTimeout: .seconds(75)
        ))
        let application = Application(
            router: api.router(includesV1: roles.contains(.api)),
            server: try configuration.tls.map { try HTTPServerBuilder.tls(http1, tlsConfiguration: $0.serverConfiguration) } ?? http1,
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port), serverName: "herald",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.limits.maximumConnections)
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? listen.port
                let address = ListenAddress(host: listen.host, port: port)
                logger.info("listening", metadata: ["address": "\(address)"])
                await onListening(address)
            },
            logger: logger
        )
        try await application.run()
    }
}
