import HeraldAPNS
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// What `SIGHUP` may change while the gateway runs: the apps (topics, hosts, credentials, and so
/// their APNs clients) and the API keys. Everything else (listen, database, TLS files, workers,
/// queue, limits) is read once at start; a reload that changes it says so and keeps the running
/// value.
///
/// Each reload makes a new ``ClientGeneration``; the one it replaces keeps serving the batches
/// and requests that took it, and is shut down (draining what is in flight) once the last of
/// them is done. Nothing queued is lost (it is in the store) and nothing sent is sent again.
final class LiveConfiguration: Sendable {
    struct Snapshot: Sendable {
        let configuration: GatewayConfiguration
        let keyring: APIKeyring
        let clients: ClientGeneration
    }

    private let current: Mutex<Snapshot>
    private let retired = Mutex<[ClientGeneration]>([])

    init(configuration: GatewayConfiguration, clients: ClientGeneration) {
        current = Mutex(Snapshot(configuration: configuration, keyring: APIKeyring(configuration.apiKeys), clients: clients))
    }

    var snapshot: Snapshot { current.withLock { $0 } }
    var configuration: GatewayConfiguration { snapshot.configuration }

    /// Puts `apps` and `apiKeys` of `new` in place, with `clients` made for them; the previous
    /// clients are shut down once nothing uses them. Returns the settings `new` changes that only
    /// a restart applies.
    func replace(with new: GatewayConfiguration, clients: ClientGeneration) async -> [String] {
        let (old, needsRestart) = current.withLock { snapshot -> (ClientGeneration, [String]) in
            var merged = snapshot.configuration
            let needsRestart = merged.restartOnlyDifferences(from: new)
            merged.apps = new.apps
            merged.apiKeys = new.apiKeys
            let old = snapshot.clients
            snapshot = Snapshot(configuration: merged, keyring: APIKeyring(merged.apiKeys), clients: clients)
            return (old, needsRestart)
        }
        retired.withLock { $0.append(old) }
        await old.retire()
        return needsRestart
    }

    /// Shuts every generation down, the current one and any still draining (the process stops).
    func shutdown() async {
        await snapshot.clients.retire()
        for generation in retired.withLock({ $0 }) { await generation.closed() }
        await snapshot.clients.closed()
    }
}

/// The clients made for one configuration: each platform's for the workers
/// (``GatewayPlatforms``), and the API's APNs channel clients, made on first use. Shut down once
/// retired and unused.
final class ClientGeneration: Sendable {
    /// Each platform's clients.
    let platforms: [DevicePlatform: any GatewayPlatform]
    /// How to make an app's channel clients for an environment: a channel-management client, and
    /// one to send broadcasts through (nil: the workers' client for it, `shared`).
    struct ChannelMaker: Sendable {
        let management: @Sendable () throws -> APNSClient
        let broadcast: (@Sendable () throws -> APNSClient)?
        let shared: APNSClient?
    }
    private let channelMakers: [AppEnvironment: ChannelMaker]

    private struct State {
        var users = 0
        var retired = false
        var closing: Task<Void, Never>?
        /// Channel clients made so far (most processes never make one), and those of them this
        /// generation owns (not the workers').
        var channels: [AppEnvironment: (management: APNSClient, broadcast: APNSClient)] = [:]
        var ownedChannels: [APNSClient] = []
    }
    private let state = Mutex(State())

    init(platforms: [DevicePlatform: any GatewayPlatform] = [:], channelMakers: [AppEnvironment: ChannelMaker] = [:]) {
        self.platforms = platforms
        self.channelMakers = channelMakers
    }

    /// How `app`'s devices of `platform` are sent, through this generation's clients.
    func delivery(for platform: DevicePlatform, app: GatewayConfiguration.App) -> any PlatformDelivery {
        if let clients = platforms[platform] { return clients.delivery(for: app) }
        // No clients made for the platform at all: its own delivery, without a client.
        return GatewayPlatforms.all.first { $0.platform == platform }!.init().delivery(for: app)
    }

    /// The channel clients of an app's environment, made on first use; `nil` when this process
    /// serves no API for it, or the generation is closing.
    func channelClients(for key: AppEnvironment) throws -> (management: APNSClient, broadcast: APNSClient)? {
        guard let maker = channelMakers[key] else { return nil }
        return try state.withLock { state in
            if let made = state.channels[key] { return made }
            guard state.closing == nil else { return nil }
            let management = try maker.management()
            state.ownedChannels.append(management)
            let broadcast: APNSClient
            if let shared = maker.shared {
                broadcast = shared
            } else {
                broadcast = try maker.broadcast!()
                state.ownedChannels.append(broadcast)
            }
            state.channels[key] = (management, broadcast)
            return (management, broadcast)
        }
    }

    /// Runs `body` with this generation's clients; it is not shut down while `body` runs.
    func using<Result: Sendable>(_ body: () async throws -> Result) async rethrows -> Result {
        state.withLock { $0.users += 1 }
        defer {
            let close = state.withLock { state -> Bool in
                state.users -= 1
                return state.retired && state.users == 0 && state.closing == nil
            }
            if close { startClosing() }
        }
        return try await body()
    }

    /// No new user will take it: it closes as soon as the last one is done.
    func retire() async {
        let close = state.withLock { state -> Bool in
            state.retired = true
            return state.users == 0 && state.closing == nil
        }
        if close { startClosing() }
    }

    /// Returns once it has closed (after it was retired and its last user was done), or when
    /// the task is cancelled (the service group's shutdown deadline passed).
    func closed() async {
        // Bounded: 10 minutes of 5 ms looks.
        for _ in 0..<120_000 {
            if let closing = state.withLock({ $0.closing }) {
                await closing.value
                return
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func startClosing() {
        let platforms = Array(platforms.values)
        state.withLock { state in
            guard state.closing == nil else { return }
            // The channel routes share the workers' clients for broadcasts: only those the
            // generation made for them are its own to close here.
            let channels = state.ownedChannels
            state.closing = Task {
                await withTaskGroup(of: Void.self) { group in
                    for clients in platforms { group.addTask { await clients.shutdown() } }
                    for client in channels { group.addTask { await client.shutdown() } }
                }
            }
        }
    }

    /// The clients `configuration` needs for `roles`: each platform's for the workers, and for
    /// the API, how to make the channel routes' clients when first used.
    static func make(_ configuration: GatewayConfiguration, roles: HeraldGateway.Roles, logger: Logger) throws -> ClientGeneration {
        let platforms = try GatewayPlatforms.clients(for: configuration, workers: roles.contains(.workers), logger: logger)
        var makers: [AppEnvironment: ChannelMaker] = [:]
        // The API's channel routes (iOS 18 broadcast, apns-spec §1.9).
        if roles.contains(.api) {
            let workers = (platforms[.apns] as? APNSPlatform)?.clients ?? [:]
            for app in configuration.apps {
                guard app.credentials != nil else { continue }
                for tokenEnvironment in TokenEnvironment.allCases {
                    guard let credentials = app.credentials(for: tokenEnvironment) else { continue }
                    let logger = APNSPlatform.logger(logger, app: app, environment: tokenEnvironment)
                    let key = AppEnvironment(app: app.id, environment: tokenEnvironment)
                    let shared = workers[key]
                    let managementHost = app.channelManagementHost(for: tokenEnvironment)
                    let pushHost = app.host(for: tokenEnvironment)
                    let management: @Sendable () throws -> APNSClient = {
                        try APNSPlatform.client(for: app, host: managementHost, credentials: credentials, connections: 1, logger: logger)
                    }
                    var broadcast: (@Sendable () throws -> APNSClient)?
                    if shared == nil {
                        broadcast = { try APNSPlatform.client(for: app, host: pushHost, credentials: credentials, connections: 1, logger: logger) }
                    }
                    makers[key] = ChannelMaker(management: management, broadcast: broadcast, shared: shared)
                }
            }
        }
        return ClientGeneration(platforms: platforms, channelMakers: makers)
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
        return changed
    }
}
