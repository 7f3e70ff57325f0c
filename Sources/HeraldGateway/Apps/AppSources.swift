import HeraldCore
import HeraldStore
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the apps in force come from: the configuration file (read at start and on each
/// `SIGHUP`) and the admin API (definitions sealed in the store, which every process sharing it
/// reads). Both reach the gateway one way: merged (``GatewayConfiguration/merging(apps:keys:)``,
/// the file's app winning over the API's of the same ID) and put in force by the gateway's one
/// function for it, one change at a time, in order.
final class AppSources: Sendable {
    /// The apps and keys the admin API defines, as this process last read them.
    struct Stored: Sendable {
        /// The catalog's version they were read at; -1 before the first read.
        var version: Int64 = -1
        /// Each app read, with the summary of the definition it was read from.
        var apps: [String: StoredApp] = [:]
        var keys: [StoredAppKey] = []
    }

    /// One app the admin API defines, read.
    struct StoredApp: Sendable {
        var summary: AppDefinitionSummary
        var app: GatewayConfiguration.App
    }

    /// How long an app may stay marked as being deleted, its deletion not going on, before any
    /// process finishes it (the process that began it stopped).
    static let abandonedDeletion: Duration = .seconds(120)

    private struct State {
        var file: GatewayConfiguration
        var stored = Stored()
        /// The change last queued: each waits for the one before.
        var tail: Task<Void, Never>?
        var apply: (@Sendable (GatewayConfiguration) async throws -> [String])?
        /// What was logged once (apps both sources define, definitions that could not be read),
        /// not logged again every second.
        var logged: Set<String> = []
        /// Deletions this process is finishing.
        var finishing: Set<String> = []
    }

    private let state: Mutex<State>
    let store: HeraldStore
    let logger: Logger
    /// The keys that seal and open the definitions: the configuration's at start.
    let keys: CredentialsKeys?

    init(file: GatewayConfiguration, store: HeraldStore, logger: Logger) {
        state = Mutex(State(file: file))
        self.store = store
        self.logger = logger
        keys = file.credentialsKeys
    }

    /// How a merged configuration is put in force (the gateway's function, given once it exists).
    func attach(_ apply: @escaping @Sendable (GatewayConfiguration) async throws -> [String]) {
        state.withLock { $0.apply = apply }
    }

    /// The configuration file's apps and keys, as last read.
    var file: GatewayConfiguration { state.withLock { $0.file } }
    /// What the admin API defines, as last read.
    var stored: Stored { state.withLock { $0.stored } }

    /// Puts a new reading of the configuration file in force, with the stored apps (`SIGHUP`).
    /// A file whose configuration cannot be put in force is not kept: the next change merges
    /// with the previous one.
    ///
    /// - Returns: the settings that only a restart applies.
    func update(file new: GatewayConfiguration) async throws -> [String] {
        if new.credentialsKeys?.description != keys?.description {
            logger.warning("the credentials key changed; it is read at start only: restart the process to use it (every process, for a rotation)")
        }
        return try await serially { [self] in
            let stored = state.withLock { $0.stored }
            let needsRestart = try await putInForce(file: new, stored: stored)
            state.withLock { $0.file = new }
            return needsRestart
        }
    }

    /// Reads the store's catalog of apps if its version changed since the last read, and puts
    /// what changed in force. Errors (the database unreachable, a definition that does not open)
    /// are logged; the apps in force stay.
    func refresh() async {
        do {
            let version = try await store.appCatalogVersion()
            guard version != stored.version else { return }
            try await serially { [self] in try await load() }
        } catch {
            once("refresh:\(error)") { logger.warning("cannot read the apps defined through the admin API; those in force stay", metadata: ["error": "\(error)"]) }
        }
    }

    /// At start, once the store is migrated: seals again with the current key every definition
    /// sealed with a previous one, then reads the stored apps and puts them in force.
    func prepareAtStart() async {
        if let keys {
            do {
                try await reseal(with: keys)
            } catch {
                logger.error("cannot seal the app definitions again with the current credentials key", metadata: ["error": "\(error)"])
            }
        }
        await refresh()
    }

    // MARK: Reading the store

    /// Reads the catalog and the definitions that changed, and puts them in force.
    private func load() async throws {
        let previous = stored
        let catalog = try await store.appCatalog()
        guard catalog.version != previous.version else { return }
        var apps: [String: StoredApp] = [:]
        var changed: [String] = []
        for summary in catalog.definitions {
            if let since = summary.deletingSince {
                finishDeletion(of: summary.id, since: since)
                continue
            }
            if let known = previous.apps[summary.id], known.summary == summary {
                apps[summary.id] = known
            } else {
                changed.append(summary.id)
            }
        }
        if !changed.isEmpty {
            if let keys {
                for definition in try await store.appDefinitions(ids: changed) {
                    do {
                        apps[definition.id] = StoredApp(summary: definition.summary, app: try Self.open(definition, with: keys))
                    } catch {
                        // The last definition read stays in force, if there was one.
                        apps[definition.id] = previous.apps[definition.id]
                        once("open:\(definition.id):\(definition.updatedAt.timeIntervalSince1970)") {
                            logger.error(
                                "an app defined through the admin API cannot be read; \(apps[definition.id] == nil ? "it is not served" : "its previous definition stays in force")",
                                metadata: ["app": "\(definition.id)", "error": "\(error)"])
                        }
                    }
                }
            } else {
                once("nokey:\(changed.count)") {
                    logger.error(
                        "apps are defined through the admin API, but this process has no credentials key to read them: it serves none of them; set \(CredentialsKeys.howToMake)",
                        metadata: ["apps": "\(changed.count)"])
                }
            }
        }
        let loaded = Stored(version: catalog.version, apps: apps, keys: catalog.keys)
        // Nothing stored, nothing stored before (a start without the admin API's apps): what is
        // in force is the file's already.
        if !(previous.apps.isEmpty && previous.keys.isEmpty && apps.isEmpty && catalog.keys.isEmpty) {
            let file = state.withLock { $0.file }
            _ = try await putInForce(file: file, stored: loaded)
        }
        state.withLock { $0.stored = loaded }
    }

    /// The app a stored definition defines, opened with `keys`.
    static func open(_ definition: AppDefinition, with keys: CredentialsKeys) throws -> GatewayConfiguration.App {
        let bytes = try keys.open(definition.sealed, sealedWith: definition.sealedWith, app: definition.id)
        var app = try GatewayConfiguration.App(id: definition.id, definition: bytes)
        app.source = .api
        return app
    }

    /// Seals again with the current key each definition a previous key sealed.
    private func reseal(with keys: CredentialsKeys) async throws {
        let catalog = try await store.appCatalog()
        let stale = catalog.definitions.filter { $0.sealedWith != keys.current.fingerprint && $0.deletingSince == nil }
        guard !stale.isEmpty else { return }
        var sealed = 0
        for definition in try await store.appDefinitions(ids: stale.map(\.id)) {
            do {
                let plain = try keys.open(definition.sealed, sealedWith: definition.sealedWith, app: definition.id)
                let again = try keys.seal(plain, app: definition.id)
                if try await store.resealAppDefinition(definition.summary, sealed: again, sealedWith: keys.current.fingerprint) { sealed += 1 }
            } catch {
                logger.error("an app definition cannot be sealed again with the current key", metadata: ["app": "\(definition.id)", "error": "\(error)"])
            }
        }
        logger.notice("app definitions sealed again with the current credentials key", metadata: ["apps": "\(sealed)", "key": "\(keys.current.fingerprint)"])
    }

    /// Finishes, in the background, the deletion of an app marked as being deleted for longer
    /// than ``abandonedDeletion``: the process that began it stopped.
    private func finishDeletion(of id: String, since: Date) {
        guard Date().timeIntervalSince(since) > Self.abandonedDeletion.seconds else { return }
        let start = state.withLock { $0.finishing.insert(id).inserted }
        guard start else { return }
        Task { [self] in
            do {
                try await store.deleteApp(id)
                logger.notice("finished deleting an app whose deletion had stopped", metadata: ["app": "\(id)"])
            } catch {
                logger.warning("cannot finish deleting an app; tried again later", metadata: ["app": "\(id)", "error": "\(error)"])
            }
            state.withLock { _ = $0.finishing.remove(id) }
        }
    }

    // MARK: Putting in force

    /// The file's configuration with the stored apps and keys, put in force by the gateway.
    private func putInForce(file: GatewayConfiguration, stored: Stored) async throws -> [String] {
        let (merged, shadowed) = file.merging(apps: stored.apps.values.map(\.app), keys: stored.keys)
        for id in shadowed {
            once("shadowed:\(id)") {
                logger.warning("an app is defined both in the configuration file and through the admin API: the file's is in force", metadata: ["app": "\(id)"])
            }
        }
        guard let apply = state.withLock({ $0.apply }) else { return [] }
        return try await apply(merged)
    }

    /// Runs `body` after every change queued before it.
    private func serially<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let task = state.withLock { state -> Task<Result, any Error> in
            let previous = state.tail
            let task = Task {
                await previous?.value
                return try await body()
            }
            state.tail = Task { _ = try? await task.value }
            return task
        }
        return try await task.value
    }

    /// Runs `body` the first time `key` is seen.
    private func once(_ key: String, _ body: () -> Void) {
        guard state.withLock({ $0.logged.insert(key).inserted }) else { return }
        body()
    }
}

extension GatewayConfiguration {
    /// This configuration (the file's) with the apps and keys the admin API defines: its apps
    /// first, then each stored app whose ID it does not define (`shadowed`: those it does, whose
    /// file entry wins), in ID order; its keys, then the stored keys (each may use its one app).
    func merging(apps stored: [App], keys: [StoredAppKey]) -> (configuration: GatewayConfiguration, shadowed: [String]) {
        var merged = self
        let ids = Set(apps.map(\.id))
        var shadowed: [String] = []
        var all = apps
        for app in stored.sorted(by: { $0.id < $1.id }) {
            if ids.contains(app.id) {
                shadowed.append(app.id)
            } else {
                var added = app
                added.source = .api
                all.append(added)
            }
        }
        merged.apps = all
        merged.apiKeys = apiKeys + keys.map(APIKey.init(stored:))
        return (merged, shadowed)
    }
}

extension APIKey {
    /// A key the admin API made for one app; named `app/name` (names are unique per app).
    init(stored: StoredAppKey) {
        self.init(name: "\(stored.app)/\(stored.name)", sha256: stored.sha256, apps: [stored.app])
    }
}
