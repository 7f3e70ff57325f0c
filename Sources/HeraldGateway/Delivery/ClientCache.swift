import Synchronization

/// One platform's clients, made when an app first sends and closed when they have been idle for
/// ``idleAfter`` or their app's configuration changed: a gateway configured with ten thousand
/// quiet apps holds no client, TLS context or connection for any of them.
///
/// Each client is made for one app at one ``GatewayConfiguration/App/revision``. A reload names
/// the revisions in force (``update(current:)``): a client of an app whose revision changed or
/// that is gone is closed once nothing uses it, and the next batch makes one with the new
/// settings; every other app keeps its client and its connections. A batch that started before
/// the reload and asks afterwards gets the current client.
final class ClientCache<Key: Hashable & Sendable, Client: Sendable>: Sendable {
    /// How long a client may go unused before it is closed.
    let idleAfter: Duration
    private let close: @Sendable (Client) async -> Void

    private struct Entry {
        let id: Int
        let client: Client
        let app: String
        let revision: String?
        var users = 0
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        var live: [Key: Entry] = [:]
        /// Replaced or stale clients still in use: each closes when its last user is done.
        var draining: [Int: Entry] = [:]
        /// Each app's revision in force; `nil` until the first ``update(current:)``.
        var current: [String: String?]?
        var nextID = 0
        var closing: [Int: Task<Void, Never>] = [:]
        var isShutDown = false
    }
    private let state = Mutex(State())
    /// Held while a client is made.
    private let making = Mutex(())

    /// - Parameters:
    ///   - idleAfter: how long a client may go unused before it is closed.
    ///   - close: shuts a client down, draining what it has in flight.
    init(idleAfter: Duration, close: @escaping @Sendable (Client) async -> Void) {
        self.idleAfter = idleAfter
        self.close = close
    }

    /// The clients open now.
    var count: Int { state.withLock { $0.live.count + $0.draining.count } }

    /// Runs `body` with `key`'s client for `app`, made with `make` when there is none (or the
    /// one there is was made for a revision no longer in force); it is not closed while `body`
    /// runs. `nil` (and `body` is not run) once the cache has shut down.
    func using<Result: Sendable>(
        _ key: Key, app: GatewayConfiguration.App, make: () throws -> Client, _ body: (Client) async throws -> Result
    ) async throws -> Result? {
        guard let (id, client) = try acquire(key, app: app, make: make) else { return nil }
        defer { release(key, id: id) }
        return try await body(client)
    }

    private func acquire(_ key: Key, app: GatewayConfiguration.App, make: () throws -> Client) throws -> (Int, Client)? {
        if let found = take(key, app: app) { return found }
        // One make at a time, outside the state's lock (a TLS context takes milliseconds: the
        // batches of apps that have their clients do not wait), so two batches of an app that
        // start together make one client, not two.
        return try making.withLock { _ -> (Int, Client)? in
            if let found = take(key, app: app) { return found }
            let made = try make()
            let (result, unused) = state.withLock { state -> ((Int, Client)?, [Client]) in
                guard !state.isShutDown else { return (nil, [made]) }
                // One made for a revision no longer in force: retired.
                var unused: [Client] = []
                if let entry = state.live[key], let client = Self.retire(entry, key: key, in: &state) { unused.append(client) }
                let id = state.nextID
                state.nextID += 1
                state.live[key] = Entry(id: id, client: made, app: app.id, revision: app.revision, users: 1, lastUsed: .now)
                return ((id, made), unused)
            }
            closeLater(unused)
            return result
        }
    }

    /// `key`'s client, when it serves `app`, taken by one more user; `.some(nil)` once shut down;
    /// `nil` when one is to be made.
    private func take(_ key: Key, app: GatewayConfiguration.App) -> (Int, Client)?? {
        state.withLock { state -> (Int, Client)?? in
            guard !state.isShutDown else { return .some(nil) }
            guard let entry = state.live[key], Self.serves(entry, app: app, current: state.current) else { return nil }
            state.live[key]!.users += 1
            return (entry.id, entry.client)
        }
    }

    /// Whether `entry` serves a batch of `app`: made for the same revision, or for the one in
    /// force (a batch from before a reload takes the current client).
    private static func serves(_ entry: Entry, app: GatewayConfiguration.App, current: [String: String?]?) -> Bool {
        if entry.revision == app.revision { return true }
        if let inForce = current?[entry.app], let inForce, inForce == entry.revision { return true }
        return false
    }

    /// Takes `entry` out of use: returns its client to close now when unused; else it closes
    /// when its last user is done.
    private static func retire(_ entry: Entry, key: Key, in state: inout State) -> Client? {
        state.live[key] = nil
        guard entry.users > 0 else { return entry.client }
        state.draining[entry.id] = entry
        return nil
    }

    private func release(_ key: Key, id: Int) {
        let unused = state.withLock { state -> [Client] in
            if state.live[key]?.id == id {
                state.live[key]!.users -= 1
                state.live[key]!.lastUsed = .now
                return []
            }
        guard var entry = state.draining[id] else { return [] }
            entry.users -= 1
            if entry.users > 0 {
                state.draining[id] = entry
                return []
            }
            state.draining[id] = nil
            return [entry.client]
        }
        closeLater(unused)
    }

    /// Puts the apps of a reload in force: each app's ``GatewayConfiguration/App/revision``
    /// (`nil` for an app made in code: always rebuilt). The clients of apps that changed or are
    /// gone close once unused.
    func update(current apps: [GatewayConfiguration.App]) {
        let unused = state.withLock { state -> [Client] in
            var current: [String: String?] = [:]
            for app in apps where current[app.id] == nil { current[app.id] = .some(app.revision) }
            state.current = current
            var unused: [Client] = []
            for (key, entry) in state.live {
                guard let inForce = current[entry.app], let revision = inForce, revision == entry.revision else {
                    if let client = Self.retire(entry, key: key, in: &state) { unused.append(client) }
                    continue
                }
            }
            return unused
        }
        closeLater(unused)
    }

    /// Closes the clients unused since `idleAfter` before `now`. Returns how many it closed.
    @discardableResult
    func closeIdle(now: ContinuousClock.Instant = .now) -> Int {
        let unused = state.withLock { state -> [Client] in
            var unused: [Client] = []
            for (key, entry) in state.live where entry.users == 0 && now - entry.lastUsed >= idleAfter {
                state.live[key] = nil
                unused.append(entry.client)
            }
            return unused
        }
        closeLater(unused)
        return unused.count
    }

    /// Closes every client, in use or not (the workers and the API have stopped), and waits
    /// until each has closed, with those closing already.
    func shutdown() async {
        let (clients, closing) = state.withLock { state -> ([Client], [Task<Void, Never>]) in
            state.isShutDown = true
            let clients = state.live.values.map(\.client) + state.draining.values.map(\.client)
            state.live = [:]
            state.draining = [:]
            return (clients, Array(state.closing.values))
        }
        let close = self.close
        await withTaskGroup(of: Void.self) { group in
            for client in clients { group.addTask { await close(client) } }
            for task in closing { group.addTask { await task.value } }
        }
    }

    /// Closes `clients` in the background; ``shutdown()`` waits for them.
    private func closeLater(_ clients: [Client]) {
        guard !clients.isEmpty else { return }
        let close = self.close
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.closing[id] = Task {
                await withTaskGroup(of: Void.self) { group in
                    for client in clients { group.addTask { await close(client) } }
                }
                self.state.withLock { _ = $0.closing.removeValue(forKey: id) }
            }
        }
    }
}

/// What the gateway asks of each platform's ``ClientCache``, whatever its clients are.
protocol ClientCaching: Sendable {
    /// The clients open now.
    var count: Int { get }
    /// Puts the apps of a reload in force (``ClientCache/update(current:)``).
    func update(current apps: [GatewayConfiguration.App])
    /// Closes the clients idle too long (``ClientCache/closeIdle(now:)``).
    @discardableResult func closeIdle(now: ContinuousClock.Instant) -> Int
    /// Closes every client.
    func shutdown() async
}

extension ClientCache: ClientCaching {}

/// One app's client of a platform, as its delivery takes it: made from the platform's cache when
/// the app first sends, with what `make` needs captured.
struct AppClient<Client: Sendable>: Sendable {
    let cache: ClientCache<String, Client>
    let app: GatewayConfiguration.App
    let make: @Sendable () throws -> Client

    /// Runs `body` with the app's client; `nil` (and `body` is not run) once the clients have
    /// shut down. Throws what `make` throws.
    func using<Result: Sendable>(_ body: (Client) async throws -> Result) async throws -> Result? {
        try await cache.using(app.id, app: app, make: make, body)
    }

    /// Sends `part` with the app's client through `send`; a client that cannot be made leaves
    /// every device to be retried, and says why in the log.
    func send(_ part: DeliveryPart, platform: String, _ send: (Client) async -> Void) async {
        do {
            _ = try await using { client in await send(client) }
        } catch {
            part.logger.error("cannot make the app's \(platform) client; retrying later", metadata: ["error": "\(error)"])
            part.recordEach(.retry(reason: .gateway(.connectionFailed)))
        }
    }
}
