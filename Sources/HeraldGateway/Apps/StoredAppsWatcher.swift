import ServiceLifecycle

/// Keeps the apps defined through the admin API in force in this process: about once a second it
/// reads the store's catalog version (one row), and when another process (or this one) changed
/// a definition or a key, reads what changed and puts it in force with the file's apps
/// (``AppSources/refresh()``). No `SIGHUP` is needed: a change is in force in every process
/// within a poll. Returns on graceful shutdown.
struct StoredAppsWatcher: Service {
    /// How often the version is read. One second: a change is in force everywhere within about
    /// that, for one indexed read a second per process.
    static let interval: Duration = .seconds(1)

    let sources: AppSources
    var interval: Duration = Self.interval

    func run() async throws {
        // Bounded by the process's life: each turn sleeps, and graceful shutdown ends the loop.
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            await sources.refresh()
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
