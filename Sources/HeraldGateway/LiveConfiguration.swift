import HeraldAPNS
import HeraldCore
import HeraldFCM
import HeraldStore
import HeraldWebPush
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

/// The APNs clients made for one configuration: the workers' (per app, environment and
/// credential), and the API's channel clients, made on first use. Shut down once retired and unused.
final class ClientGeneration: Sendable {
    let clients: [AppEnvironment: APNSClient]
    /// The workers' Web Push client of each app that has `webPush`.
    let webPushClients: [String: WebPushClient]
    /// The FCM client of each app that reaches Android devices, by app ID.
    let fcmClients: [String: FCMClient]
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

    init(
        clients: [AppEnvironment: APNSClient], channelMakers: [AppEnvironment: ChannelMaker], webPushClients: [String: WebPushClient] = [:],
        fcmClients: [String: FCMClient] = [:]
    ) {
        self.fcmClients = fcmClients
        self.clients = clients
        self.webPushClients = webPushClients
        self.channelMakers = channelMakers
    }

    /// How `app`'s devices of `platform` are sent, through this generation's clients.
    func delivery(for platform: DevicePlatform, app: GatewayConfiguration.App) -> any PlatformDelivery {
        switch platform {
        case .apns: APNSDelivery(clients: clients)
        case .webpush: WebPushDelivery(client: webPushClients[app.id])
        case .fcm: FCMDelivery(client: fcmClients[app.id])
        }
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
        let workers = Array(clients.values)
        let browsers = Array(webPushClients.values)
        let android = Array(fcmClients.values)
        state.withLock { state in
            guard state.closing == nil else { return }
            // Each client once: the channel routes share the workers' for broadcasts.
            let all = workers + state.ownedChannels
            state.closing = Task {
                await withTaskGroup(of: Void.self) { group in
                    for client in all { group.addTask { await client.shutdown() } }
                    for client in browsers { group.addTask { try? await client.shutdown() } }
                    for client in android { group.addTask { try? await client.shutdown() } }
                }
            }
        }
    }

    /// The clients `configuration` needs for `roles`: a client per app, token environment and
    /// credential for the workers (the app's, and each kind's own), each connecting only when it
    /// has something to send (an app without sandbox devices never opens a sandbox connection);
    /// and for the API, how to make the channel routes' clients when first used.
    static func make(_ configuration: GatewayConfiguration, roles: HeraldGateway.Roles, logger: Logger) throws -> ClientGeneration {
        var clients: [AppEnvironment: APNSClient] = [:]
        var makers: [AppEnvironment: ChannelMaker] = [:]
        var browsers: [String: WebPushClient] = [:]
        var android: [String: FCMClient] = [:]
        for app in configuration.apps {
            if roles.contains(.workers), let fcm = app.fcm {
                var settings = FCMClient.Configuration(serviceAccount: fcm.serviceAccount)
                settings.endpoint = fcm.endpoint
                settings.additionalTrustRoots = fcm.trustRoots
                settings.maximumConnections = fcm.connections
                // The queue retries: one attempt per claim, as for APNs.
                settings.retry = .none
                var clientLogger = logger
                clientLogger[metadataKey: "app"] = "\(app.id)"
                logger.info("FCM client", metadata: ["app": "\(app.id)", "project": "\(fcm.serviceAccount.projectID)", "endpoint": "\(fcm.endpoint)"])
                android[app.id] = try FCMClient(configuration: settings, logger: clientLogger)
            }
            if roles.contains(.workers), let webPush = app.webPush {
                var settings = WebPushClient.Configuration(vapid: try VAPIDSigner(key: webPush.key, subject: webPush.subject))
                settings.additionalTrustRoots = webPush.trustRoots
                settings.subscriptionPolicy = webPush.policy
                // The queue retries: one attempt per claim, as for APNs.
                settings.retry = .none
                var clientLogger = logger
                clientLogger[metadataKey: "app"] = "\(app.id)"
                logger.info("Web Push client", metadata: ["app": "\(app.id)", "key": "\(webPush.key.publicKeyBase64URL)", "subject": "\(webPush.subject)"])
                browsers[app.id] = WebPushClient(configuration: settings, logger: clientLogger)
            }
            // An app that reaches browsers only has no APNs client.
            guard let appCredentials = app.credentials else { continue }
            let credentials: [(kind: TokenKind?, credentials: APNSCredentials)] =
                [(nil, appCredentials)] + TokenKind.allCases.compactMap { kind in app.credentialsByKind[kind].map { (kind, $0) } }
            for tokenEnvironment in TokenEnvironment.allCases {
                var clientLogger = logger
                clientLogger[metadataKey: "app"] = "\(app.id)"
                clientLogger[metadataKey: "environment"] = "\(tokenEnvironment)"
                let logger = clientLogger
                @Sendable func client(_ host: APNSEnvironment, _ credentials: APNSCredentials, connections: Int) throws -> APNSClient {
                    var client = APNSClient.Configuration(environment: host, credentials: credentials)
                    client.trustRoots = app.trustRoots
                    client.pool.maximumConnections = connections
                    client.metrics.dimensions = [("app", app.id)]
                    return try APNSClient(configuration: client, logger: logger)
                }
                if roles.contains(.workers) {
                    for (kind, credential) in credentials {
                        let kinds = kind.map { [$0] } ?? TokenKind.allCases.filter { app.credentialsByKind[$0] == nil }
                        // Decided once per configuration: which host and credential serve this
                        // app's devices of this environment and kinds.
                        logger.info(
                            "APNs client",
                            metadata: [
                                "host": "\(app.host(for: tokenEnvironment))", "credential": "\(GatewayConfiguration.App.describe(credential))",
                                "kinds": "\(kinds.map(\.rawValue).joined(separator: ","))", "default": "\(tokenEnvironment == app.defaultEnvironment)",
                            ]
                        )
                        clients[AppEnvironment(app: app.id, environment: tokenEnvironment, kind: kind)] =
                            try client(app.host(for: tokenEnvironment), credential, connections: app.connections)
                    }
                }
                // The API's channel routes (iOS 18 broadcast, apns-spec §1.9).
                if roles.contains(.api) {
                    let key = AppEnvironment(app: app.id, environment: tokenEnvironment)
                    let shared = clients[key]
                    let managementHost = app.channelManagementHost(for: tokenEnvironment)
                    let pushHost = app.host(for: tokenEnvironment)
                    let credentials = appCredentials
                    let management: @Sendable () throws -> APNSClient = { try client(managementHost, credentials, connections: 1) }
                    var broadcast: (@Sendable () throws -> APNSClient)?
                    if shared == nil { broadcast = { try client(pushHost, credentials, connections: 1) } }
                    makers[key] = ChannelMaker(management: management, broadcast: broadcast, shared: shared)
                }
            }
        }
        return ClientGeneration(clients: clients, channelMakers: makers, webPushClients: browsers, fcmClients: android)
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
