import PostgresNIO
import Synchronization

/// The connection pool operations take connections from, made anew after a long outage
/// (``PostgresReachability/replacePoolAfter``): postgres-nio's pool backs its reconnection off
/// for up to a minute and offers no way to make it try again now.
final class PostgresPools: Sendable {
    private struct State {
        var current: PostgresClient
        var generation = 0
        /// Each pool's `run()`, by generation, until it returns.
        var running: [Int: Task<Void, Never>] = [:]
        var isRunning = false
    }

    private let make: @Sendable () -> PostgresClient
    private let state: Mutex<State>

    init(_ make: @escaping @Sendable () -> PostgresClient) {
        self.make = make
        state = Mutex(State(current: make()))
    }

    /// The pool operations use now.
    var current: PostgresClient { state.withLock { $0.current } }

    /// Runs the current pool, and each that replaces it, until cancelled; then closes them all.
    func run() async {
        state.withLock { state in
            state.isRunning = true
            start(state.current, generation: state.generation, in: &state)
        }
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        let running = state.withLock { state in
            state.isRunning = false
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    /// Puts a new pool in the current one's place and closes the old one (its connections, and
    /// any operation still on them, which the database's outage has already failed).
    func replace() {
        let old = state.withLock { state -> Task<Void, Never>? in
            guard state.isRunning else { return nil }
            let old = state.running[state.generation]
            state.generation += 1
            state.current = make()
            start(state.current, generation: state.generation, in: &state)
            return old
        }
        old?.cancel()
    }

    private func start(_ client: PostgresClient, generation: Int, in state: inout State) {
        state.running[generation] = Task { [self] in
            await client.run()
            _ = self.state.withLock { $0.running.removeValue(forKey: generation) }
        }
    }
}
