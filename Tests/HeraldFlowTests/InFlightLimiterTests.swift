@_spi(HeraldFlow) import HeraldFlow
import HeraldTestSupport
import Synchronization
import Testing

/// A value tasks of a test share.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

@Suite("InFlightLimiter: the in-flight bound", .timeLimit(.minutes(6)))
struct InFlightLimiterTests {
    @Test("permits are granted up to the limit, in batches as large as asked and free")
    func grantsUpToTheLimit() async throws {
        let limiter = InFlightLimiter(limit: 10)
        #expect(try await limiter.acquire(maximum: 4) == 4)
        #expect(try await limiter.acquire(maximum: 100) == 6)
        #expect(limiter.available == 0)
        limiter.release(10)
        #expect(limiter.available == 10)
        #expect(InFlightLimiter(limit: 0).limit == 1, "a limit below 1 would never grant anything")
    }

    @Test("at the bound, callers wait and are served first come, first served")
    func waitersInOrder() async throws {
        let limiter = InFlightLimiter(limit: 1)
        _ = try await limiter.acquire()
        let order = Shared<[Int]>([])
        let first = Task {
            _ = try await limiter.acquire()
            order.withLock { $0.append(1) }
        }
        #expect(await eventually { limiter.waiting == 1 })
        let second = Task {
            _ = try await limiter.acquire()
            order.withLock { $0.append(2) }
        }
        #expect(await eventually { limiter.waiting == 2 })
        defer { first.cancel(); second.cancel() }
        limiter.release()
        #expect(await eventually { order.withLock { $0 } == [1] }, "the first to wait is served first")
        #expect(limiter.waiting == 1, "one permit woke one waiter")
        limiter.release()
        #expect(await eventually { order.withLock { $0 } == [1, 2] })
        #expect(limiter.available == 0)
    }

    @Test("a waiter woken with several permits free takes as many as it asked for, up to what is free")
    func batchWaiter() async throws {
        let limiter = InFlightLimiter(limit: 8)
        _ = try await limiter.acquire(maximum: 8)
        let waiter = Task { try await limiter.acquire(maximum: 5) }
        #expect(await eventually { limiter.waiting == 1 })
        defer { waiter.cancel() }
        limiter.release(3)
        #expect(await eventually { limiter.waiting == 0 })
        #expect(try await waiter.value == 3)
        limiter.release(5)
        #expect(limiter.available == 5)
    }

    @Test("a cancelled waiter throws CancellationError, takes no permit, and does not block the ones behind it")
    func cancelledWaiter() async throws {
        let limiter = InFlightLimiter(limit: 1)
        _ = try await limiter.acquire()
        let cancelled = Task { try await limiter.acquire() }
        #expect(await eventually { limiter.waiting == 1 })
        let behind = Task { try await limiter.acquire() }
        #expect(await eventually { limiter.waiting == 2 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(limiter.waiting == 1)
        defer { behind.cancel() }
        limiter.release()
        #expect(await eventually { limiter.waiting == 0 })
        #expect(try await behind.value == 1)
        #expect(limiter.available == 0, "the cancelled waiter's turn did not consume the permit")
    }

    @Test("a task cancelled before it waits is refused at once")
    func cancelledBeforeWaiting() async throws {
        let limiter = InFlightLimiter(limit: 1)
        _ = try await limiter.acquire()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await limiter.acquire()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(limiter.waiting == 0)
    }
}
