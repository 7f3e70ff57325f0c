import NIOCore
import Synchronization

/// The outcomes of a bulk send: exactly one ``APNSOutcome`` per notification, in the order they
/// complete. Sending starts with the iteration; see ``APNSClient/send(contentsOf:logger:)-(Sequence,_)``.
public struct APNSBulkSend: AsyncSequence, Sendable {
    public typealias Element = APNSOutcome

    private let limiter: InFlightLimiter
    private let producer: @Sendable (BulkSink) async -> Void

    init(limiter: InFlightLimiter, producer: @escaping @Sendable (BulkSink) async -> Void) {
        self.limiter = limiter
        self.producer = producer
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lifetime: Lifetime(sink: BulkSink(limiter: limiter), producer: producer))
    }

    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private let lifetime: Lifetime
        private var buffered = CircularBuffer<APNSOutcome>()
        private var finished = false

        init(lifetime: Lifetime) {
            self.lifetime = lifetime
        }

        /// The next outcome, or `nil` once every notification has one. Throws the error the input
        /// sequence threw, after the outcomes of the notifications it produced before.
        public mutating func next() async throws -> APNSOutcome? {
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
    }

    /// Starts the producer on first use; stops it, and lets in-flight outcomes release their
    /// permits, when the iterator is dropped before the end.
    final class Lifetime: Sendable {
        let sink: BulkSink
        private let producer: @Sendable (BulkSink) async -> Void
        private let task = Mutex<(task: Task<Void, Never>?, done: Bool)>((nil, false))

        init(sink: BulkSink, producer: @escaping @Sendable (BulkSink) async -> Void) {
            self.sink = sink
            self.producer = producer
        }

        func start() {
            task.withLock { state in
                guard state.task == nil else { return }
                let sink = self.sink
                let producer = self.producer
                state.task = Task { await producer(sink) }
            }
        }

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
