import NIOCore
import Synchronization

/// The consuming side of a bulk send: starts the producer on the first `next()`, hands out the
/// outcomes gathered in the sink, and stops the producer when dropped before the end. The public
/// bulk-send sequences of the HTTP/2 and legacy clients wrap it.
@_spi(HeraldFlow) public struct BulkIterator<Outcome: Sendable>: Sendable {
    @usableFromInline
    let lifetime: Lifetime
    @usableFromInline
    var buffered = CircularBuffer<Outcome>()
    @usableFromInline
    var finished = false

    @inlinable
    public init(limiter: InFlightLimiter, producer: @escaping @Sendable (BulkSink<Outcome>) async -> Void) {
        lifetime = Lifetime(sink: BulkSink(limiter: limiter), producer: producer)
    }

    /// The next outcome, or `nil` once every notification has one. Throws the error the input
    /// sequence threw, after the outcomes of the notifications it produced before.
    @inlinable
    public mutating func next() async throws -> Outcome? {
        if let outcome = buffered.popFirst() { return outcome }
        if finished { return nil }
        lifetime.start()
        do {
            buffered = try await lifetime.sink.take()
        } catch {
            finished = true
            lifetime.finished()
            throw error
        }
        guard let outcome = buffered.popFirst() else {
            finished = true
            lifetime.finished()
            return nil
        }
        return outcome
    }

    /// Starts the producer on first use; stops it, and lets in-flight outcomes release their
    /// permits, when the iterator is dropped before the end.
    @usableFromInline
    final class Lifetime: Sendable {
        @usableFromInline let sink: BulkSink<Outcome>
        @usableFromInline
        let producer: @Sendable (BulkSink<Outcome>) async -> Void
        @usableFromInline
        let task = Mutex<(task: Task<Void, Never>?, done: Bool)>((nil, false))

        @usableFromInline
        init(sink: BulkSink<Outcome>, producer: @escaping @Sendable (BulkSink<Outcome>) async -> Void) {
            self.sink = sink
            self.producer = producer
        }

        @usableFromInline
        func start() {
            task.withLock { state in
                guard state.task == nil else { return }
                let sink = self.sink
                let producer = self.producer
                state.task = Task { await producer(sink) }
            }
        }

        @usableFromInline
        func finished() {
            task.withLock { $0.done = true }
        }

        deinit {
            let (task, done) = self.task.withLock { ($0.task, $0.done) }
            if !done {
                task?.cancel()
                sink.abandon()
            }
        }
    }
}

/// A bulk send not started yet: each iteration makes a fresh ``BulkIterator`` with its own sink,
/// which starts the producer.
@_spi(HeraldFlow) public struct BulkSend<Outcome: Sendable>: Sendable {
    @usableFromInline
    let limiter: InFlightLimiter
    @usableFromInline
    let producer: @Sendable (BulkSink<Outcome>) async -> Void

    @inlinable
    public init(limiter: InFlightLimiter, producer: @escaping @Sendable (BulkSink<Outcome>) async -> Void) {
        self.limiter = limiter
        self.producer = producer
    }

    @inlinable
    public func makeIterator() -> BulkIterator<Outcome> {
        BulkIterator(limiter: limiter, producer: producer)
    }
}
