@_spi(HeraldFlow) import HeraldFlow

/// The outcomes of a bulk send: exactly one ``APNSOutcome`` per notification, in the order they
/// complete. Sending starts with the iteration; see ``APNSClient/send(contentsOf:logger:)-(Sequence,_)``.
public struct APNSBulkSend: AsyncSequence, Sendable {
    public typealias Element = APNSOutcome

    private let base: BulkSend<APNSOutcome>

    init(limiter: InFlightLimiter, producer: @escaping @Sendable (BulkSink<APNSOutcome>) async -> Void) {
        base = BulkSend(limiter: limiter, producer: producer)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private var base: BulkIterator<APNSOutcome>

        init(base: BulkIterator<APNSOutcome>) {
            self.base = base
        }

        /// The next outcome, or `nil` once every notification has one. Throws the error the input
        /// sequence threw, after the outcomes of the notifications it produced before.
        public mutating func next() async throws -> APNSOutcome? {
            try await base.next()
        }
    }
}
