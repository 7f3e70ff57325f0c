import Foundation

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
