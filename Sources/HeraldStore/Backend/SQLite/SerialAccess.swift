import Synchronization

/// One task at a time, in the order they asked, across suspension points: an SQLite connection
/// runs one transaction at a time, and a transaction hops to the database's own thread and back.
final class SerialAccess: Sendable {
    private let state = Mutex<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()  // still busy: handed over
        }
        next?.resume()
    }
}

/// Wakes tasks waiting for work in this process: what SQLite has instead of LISTEN/NOTIFY.
final class WorkSignal: Sendable {
    private struct State {
        var next: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waits begun whose continuation is not registered yet.
        var starting: Set<UInt64> = []
        /// Waits that timed out before their continuation was registered.
        var ended: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// Wakes every waiting task.
    func signal() {
        let woken = state.withLock { state in
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns at the next ``signal()`` or after `timeout`, whichever comes first.
    func wait(timeout: Duration) async {
        let id = state.withLock { state in
            defer { state.next += 1 }
            state.starting.insert(state.next)
            return state.next
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
            }
            group.addTask { [self] in
                await withCheckedContinuation { continuation in
                    let ended = state.withLock { state -> Bool in
                        state.starting.remove(id)
                        if state.ended.remove(id) != nil { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if ended { continuation.resume() }
                }
            }
            await group.next()
            group.cancelAll()
            // The waiting side is not cancellable: end it if the timeout came first.
            let own = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.starting.remove(id) != nil { state.ended.insert(id) }  // else a signal woke it
                return nil
            }
            own?.resume()
        }
    }
}
