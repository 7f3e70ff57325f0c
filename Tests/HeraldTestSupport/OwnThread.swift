import Foundation
import Synchronization

/// Runs `body`, which blocks (it waits for a process, a pipe or a sleep), on a thread of its own,
/// and returns what it returns.
///
/// Every test of the process runs on Swift's cooperative pool, which has one thread per core
/// (2 on CI). A test that blocks one of them stalls every other test's tasks until it is done:
/// a gateway under test then misses its own deadlines. While two tests waited on processes for
/// 10 s, a gateway's stop that takes 3 s took 11.7 to 12.9 s. So a test helper that blocks for
/// longer than a moment is `async` and blocks here instead.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// ``onOwnThread(_:)`` for a `body` that cannot throw.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: body())
        }
    }
}

/// How late the cooperative pool runs a task, measured while a timing-sensitive part of a test
/// runs: a late pool (a test helper that blocks it, as in ``onOwnThread(_:)``) explains a slow
/// result that the code under test did not cause.
public final class PoolLateness: Sendable {
    private final class Worst: Sendable {
        let value = Mutex<Duration>(.zero)
    }

    private let worst = Worst()
    private let task: Task<Void, Never>

    /// Starts measuring: a task wakes every 50 ms and records how far past its time it woke.
    public init() {
        let worst = self.worst
        task = Task {
            let clock = ContinuousClock()
            let period = Duration.milliseconds(50)
            while !Task.isCancelled {
                let due = clock.now + period
                try? await Task.sleep(until: due, clock: clock)
                let late = clock.now - due
                worst.value.withLock { $0 = max($0, late) }
            }
        }
    }

    /// Stops measuring; the longest the task waited past its time.
    public func stop() -> Duration {
        task.cancel()
        return worst.value.withLock { $0 }
    }
}
