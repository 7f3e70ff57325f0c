import HeraldAPNS
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// What `SIGHUP` may change while the gateway runs: the apps (topics, hosts, credentials, and so
/// their clients) and the API keys. Everything else (listen, database, TLS files, workers,
/// queue, limits) is read once at start; a reload that changes it says so and keeps the running
/// value.
///
/// The clients (``GatewayClients``) live as long as the process: a reload closes only the
/// clients of the apps it changes or removes (once the batches using them are done), and every
/// other app keeps its connections. Nothing queued is lost (it is in the store) and nothing sent
/// is sent again.
final class LiveConfiguration: Sendable {
    struct Snapshot: Sendable {
        let configuration: GatewayConfiguration
        let keyring: APIKeyring
        let clients: GatewayClients
        /// The configurations put in force before this one: 0 at start, one more for each reload.
        let generation: Int
    }

    /// What a reload changed: the apps it added, changed (their entry or a file they name) and
    /// removed, and the settings only a restart applies.
    struct Changes: Sendable {
        var added: [String] = []
        var changed: [String] = []
        var removed: [String] = []
        var needsRestart: [String] = []
    }

    private let current: Mutex<Snapshot>

    init(configuration: GatewayConfiguration, clients: GatewayClients) {
        current = Mutex(Snapshot(configuration: configuration, keyring: APIKeyring(configuration.apiKeys), clients: clients, generation: 0))
    }

    var snapshot: Snapshot { current.withLock { $0 } }
    var configuration: GatewayConfiguration { snapshot.configuration }

    /// Puts the apps and API keys of `new` in force: the clients of apps it changes or removes
    /// close once unused, the others stay. Returns what changed.
    func replace(with new: GatewayConfiguration) -> Changes {
        let (changes, clients) = current.withLock { snapshot -> (Changes, GatewayClients) in
            var merged = snapshot.configuration
            var changes = Changes()
            changes.needsRestart = merged.restartOnlyDifferences(from: new)
            for app in new.apps {
                guard let old = merged.app(app.id) else {
                    changes.added.append(app.id)
                    continue
                }
                // An app made in code has no revision: it counts as changed.
                if old.revision == nil || old.revision != app.revision { changes.changed.append(app.id) }
            }
            let kept = Set(new.apps.map(\.id))
            changes.removed = merged.apps.map(\.id).filter { !kept.contains($0) }
            merged.apps = new.apps
            merged.apiKeys = new.apiKeys
            snapshot = Snapshot(
                configuration: merged, keyring: APIKeyring(merged.apiKeys), clients: snapshot.clients, generation: snapshot.generation + 1)
            return (changes, snapshot.clients)
        }
        clients.update(current: new.apps)
        return changes
    }

    /// Closes every client (the process stops).
    func shutdown() async {
        await snapshot.clients.shutdown()
    }
}

/// The gateway's clients to push services, for as long as it runs: each platform's for the
/// workers (``GatewayPlatforms``), and the API's APNs channel clients. Each is made when its
/// app first needs it and closed when idle (``WorkerSettings/idleClientTimeout``) or when a
/// reload changes its app.
final class GatewayClients: Sendable {
    /// Each platform's clients.
    let platforms: [DevicePlatform: any GatewayPlatform]
    /// The channel routes' own clients (iOS 18 broadcast, apns-spec §1.9): a channel-management
    /// client per app and environment, and a broadcast one where this process has no workers
    /// whose client it can share; `nil`: this process serves no API.
    private let channels: ClientCache<ChannelClientKey, APNSClient>?
    private let labels: AppLabels
    private let logger: Logger

    struct ChannelClientKey: Hashable, Sendable {
        var app: String
        var environment: TokenEnvironment
        var broadcast: Bool
    }

    init(
        platforms: [DevicePlatform: any GatewayPlatform] = [:], channels: ClientCache<ChannelClientKey, APNSClient>? = nil,
        labels: AppLabels = AppLabels(limit: MetricsSettings().maximumAppLabels),
        logger: Logger = Logger(label: "herald.gateway", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.platforms = platforms
        self.channels = channels
        self.labels = labels
        self.logger = logger
    }

    /// How `app`'s devices of `platform` are sent.
    func delivery(for platform: DevicePlatform, app: GatewayConfiguration.App) -> any PlatformDelivery {
        if let clients = platforms[platform] { return clients.delivery(for: app) }
        // No clients made for the platform at all: its own delivery, without a client.
        return GatewayPlatforms.conformance(of: platform).init().delivery(for: app)
    }

    /// Every cache of clients: the platforms' and the channels'.
    private var caches: [any ClientCaching] {
        platforms.values.compactMap(\.cache) + (channels.map { [$0] } ?? [])
    }

    /// The clients open now, of every platform.
    var count: Int { caches.reduce(0) { $0 + $1.count } }

    /// Runs `body` with the channel clients of `app`'s `environment`, made on first use; `nil`
    /// (and `body` is not run) when this process serves no API, the app has no credential for
    /// the environment, or the clients have shut down.
    func withChannelClients<Result: Sendable>(
        app: GatewayConfiguration.App, environment: TokenEnvironment,
        _ body: ((management: APNSClient, broadcast: APNSClient)) async throws -> Result
    ) async throws -> Result? {
        guard let channels, let credentials = APNSPlatform.credential(of: app, environment: environment, kind: nil) else { return nil }
        let logger = APNSPlatform.logger(self.logger, app: app, environment: environment)
        let managementKey = ChannelClientKey(app: app.id, environment: environment, broadcast: false)
        let managementHost = app.channelManagementHost(for: environment)
        let made = try await channels.using(managementKey, app: app, make: {
            try APNSPlatform.client(for: app, host: managementHost, credentials: credentials, connections: 1, label: self.labels.label(app.id), logger: logger)
        }) { management -> Result? in
            // Broadcasts go through the workers' client for the environment when this process has one.
            if let workers = self.platforms[.apns] as? APNSPlatform, workers.clients != nil {
                return try await workers.using(AppEnvironment(app: app.id, environment: environment), app: app) { broadcast in
                    try await body((management, broadcast))
                }
            }
            let pushHost = app.host(for: environment)
            return try await channels.using(ChannelClientKey(app: app.id, environment: environment, broadcast: true), app: app, make: {
                try APNSPlatform.client(for: app, host: pushHost, credentials: credentials, connections: 1, label: self.labels.label(app.id), logger: logger)
            }) { broadcast in
                try await body((management, broadcast))
            }
        }
        return made ?? nil
    }

    /// Puts the apps of a reload in force: the clients of apps changed or gone close once unused.
    func update(current apps: [GatewayConfiguration.App]) {
        for cache in caches { cache.update(current: apps) }
    }

    /// Closes every client idle longer than ``WorkerSettings/idleClientTimeout``. Returns how many.
    @discardableResult
    func closeIdle(now: ContinuousClock.Instant = .now) -> Int {
        caches.reduce(0) { $0 + $1.closeIdle(now: now) }
    }

    /// Closes every client (the workers and the API have stopped).
    func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for cache in caches { group.addTask { await cache.shutdown() } }
        }
    }

    /// The clients `configuration` and its reloads need for `roles`: each platform's for the
    /// workers, and the channel routes' for the API. None is made yet.
    static func make(_ configuration: GatewayConfiguration, roles: HeraldGateway.Roles, labels: AppLabels, logger: Logger) throws -> GatewayClients {
        let platforms = try GatewayPlatforms.clients(for: configuration, workers: roles.contains(.workers), labels: labels, logger: logger)
        let channels = roles.contains(.api) ? ClientCache<ChannelClientKey, APNSClient>(idleAfter: configuration.workers.idleClientTimeout) { await $0.shutdown() } : nil
        return GatewayClients(platforms: platforms, channels: channels, labels: labels, logger: logger)
    }
}

extension GatewayConfiguration {
    /// The settings `new` changes that a reload does not apply (everything but apps and API keys).
    func restartOnlyDifferences(from new: GatewayConfiguration) -> [String] {
        var changed: [String] = []
        if listen != new.listen { changed.append("listen") }
        if database != new.database { changed.append("database") }
        if (tls == nil) != (new.tls == nil) { changed.append("tls") }
        if queue != new.queue { changed.append("queue") }
        if workers != new.workers { changed.append("workers") }
        if limits != new.limits { changed.append("limits") }
        if housekeeping != new.housekeeping { changed.append("housekeeping") }
        if webhookSender != new.webhookSender { changed.append("webhookSender") }
        if metrics != new.metrics { changed.append("metrics") }
        return changed
    }
}
