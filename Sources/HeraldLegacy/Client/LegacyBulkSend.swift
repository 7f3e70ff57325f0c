@_spi(HeraldFlow) import HeraldFlow

/// The outcomes of a legacy bulk send: exactly one ``LegacyOutcome`` per notification, in the
/// order they complete. Sending starts with the iteration; see
/// ``LegacyClient/send(contentsOf:)-(Sequence)``.
public struct LegacyBulkSend: AsyncSequence, Sendable {
    public typealias Element = LegacyOutcome

    private let base: BulkSend<LegacyOutcome>

    init(limiter: InFlightLimiter, producer: @escaping @Sendable (BulkSink<LegacyOutcome>) async -> Void) {
        base = BulkSend(limiter: limiter, producer: producer)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private var base: BulkIterator<LegacyOutcome>

        init(base: BulkIterator<LegacyOutcome>) {
            self.base = base
        }

        /// The next outcome, or `nil` once every notification has one. Throws the error the input
        /// sequence threw, after the outcomes of the notifications it produced before.
        public mutating func next() async throws -> LegacyOutcome? {
            try await base.next()
        }
    }
}
