import HeraldClient
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

/// The APNs clients made for one configuration: the workers' (per app, environment and
/// credential) and the API's channel clients. Shut down once retired and unused.
final class ClientGeneration: Sendable {
    let clients: [AppEnvironment: APNSClient]
    let channels: ChannelClients
    private let state = Mutex<(users: Int, retired: Bool, closing: Task<Void, Never>?)>((0, false, nil))

    init(clients: [AppEnvironment: APNSClient], channels: ChannelClients) {
        self.clients = clients
        self.channels = channels
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

    /// Returns once it has closed (after it was retired and its last user was done).
    func closed() async {
        for _ in 0..<600_000 {
            if let closing = state.withLock({ $0.closing }) {
                await closing.value
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func startClosing() {
        let all = allClients
        state.withLock { state in
            guard state.closing == nil else { return }
            state.closing = Task {
                await withTaskGroup(of: Void.self) { group in
                    for client in all { group.addTask { await client.shutdown() } }
                }
            }
        }
    }

    /// Each client once (the channel routes share the workers' for broadcasts).
    private var allClients: [APNSClient] {
        var seen = Set<ObjectIdentifier>()
        return (Array(clients.values) + channels.owned).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// The clients `configuration` needs for `roles`: a client per app, token environment and
    /// credential for the workers (the app's, and each kind's own), and for the API a
    /// channel-management client per app and environment, and one to send broadcasts through
    /// (the workers' when this process has them). Each connects only when it has something to
    /// send, so an app without sandbox devices never opens a sandbox connection.
    static func make(_ configuration: GatewayConfiguration, roles: HeraldGateway.Roles, logger: Logger) throws -> ClientGeneration {
        var clients: [AppEnvironment: APNSClient] = [:]
        var channels = ChannelClients()
        for app in configuration.apps {
            let credentials: [(kind: TokenKind?, credentials: APNSCredentials)] =
                [(nil, app.credentials)] + TokenKind.allCases.compactMap { kind in app.credentialsByKind[kind].map { (kind, $0) } }
            for tokenEnvironment in TokenEnvironment.allCases {
                var clientLogger = logger
                clientLogger[metadataKey: "app"] = "\(app.id)"
                clientLogger[metadataKey: "environment"] = "\(tokenEnvironment)"
                func client(_ host: APNSEnvironment, _ credentials: APNSCredentials, connections: Int) throws -> APNSClient {
                    var client = APNSClient.Configuration(environment: host, credentials: credentials)
                    client.trustRoots = app.trustRoots
                    client.pool.maximumConnections = connections
                    client.metrics.dimensions = [("app", app.id)]
                    return try APNSClient(configuration: client, logger: clientLogger)
                }
                if roles.contains(.workers) {
                    for (kind, credential) in credentials {
                        let kinds = kind.map { [$0] } ?? TokenKind.allCases.filter { app.credentialsByKind[$0] == nil }
                        // Decided once per configuration: which host and credential serve this
                        // app's devices of this environment and kinds.
                        logger.info(
                            "APNs client",
                            metadata: [
                                "app": "\(app.id)", "environment": "\(tokenEnvironment)", "host": "\(app.host(for: tokenEnvironment))",
                                "credential": "\(GatewayConfiguration.App.describe(credential))", "kinds": "\(kinds.map(\.rawValue).joined(separator: ","))",
                                "default": "\(tokenEnvironment == app.defaultEnvironment)",
                            ]
                        )
                        clients[AppEnvironment(app: app.id, environment: tokenEnvironment, kind: kind)] =
                            try client(app.host(for: tokenEnvironment), credential, connections: app.connections)
                    }
                }
                // The API's channel routes (iOS 18 broadcast, apns-spec §1.9).
                if roles.contains(.api) {
                    let key = AppEnvironment(app: app.id, environment: tokenEnvironment)
                    let management = try client(app.channelManagementHost(for: tokenEnvironment), app.credentials, connections: 1)
                    channels.management[key] = management
                    channels.owned.append(management)
                    if let shared = clients[key] {
                        channels.broadcast[key] = shared
                    } else {
                        let own = try client(app.host(for: tokenEnvironment), app.credentials, connections: 1)
                        channels.broadcast[key] = own
                        channels.owned.append(own)
                    }
                }
            }
        }
        return ClientGeneration(clients: clients, channels: channels)
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
        return changed
    }
}
