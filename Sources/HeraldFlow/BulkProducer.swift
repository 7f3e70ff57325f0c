/// A notification prepared for sending, or its outcome when it was refused before sending.
@_spi(HeraldFlow) public enum BulkPreparation<Job, Outcome> {
    case job(Job)
    case refused(Outcome)
}

/// Feeds a bulk send: takes elements as in-flight permits allow, prepares them, and submits the
/// jobs, so the HTTP/2 and legacy clients share one back-pressure discipline. A refused element's
/// permit comes back when the consumer takes its outcome, like any other.
@_spi(HeraldFlow) public enum BulkProducer {
    /// A synchronous sequence never suspends between elements, so elements are taken and
    /// submitted in batches as large as the free permits (up to `batch`): one lock and one wake-up
    /// per batch.
    @inlinable
    public static func run<Elements: Sequence, Job, Outcome: Sendable>(
        _ elements: Elements,
        limiter: InFlightLimiter,
        sink: BulkSink<Outcome>,
        batch: Int = 256,
        prepare: (consuming Elements.Element, Int) -> BulkPreparation<Job, Outcome>,
        submit: ([Job]) -> Void
    ) async {
        var iterator = elements.makeIterator()
        var index = 0
        var exhausted = false
        while !exhausted {
            let permits: Int
            do {
                permits = try await limiter.acquire(maximum: batch)
            } catch {
                break  // cancelled
            }
            var jobs: [Job] = []
            jobs.reserveCapacity(permits)
            var refused: [Outcome] = []
            var taken = 0
            while taken < permits {
                guard let element = iterator.next() else {
                    exhausted = true
                    break
                }
                taken += 1
                switch prepare(element, index) {
                case .job(let job): jobs.append(job)
                case .refused(let outcome): refused.append(outcome)
                }
                index += 1
            }
            limiter.release(permits - taken)
            sink.submitted(taken)
            if !refused.isEmpty { sink.deliver(contentsOf: refused) }
            if !jobs.isEmpty { submit(jobs) }
            if Task.isCancelled { break }
        }
        sink.producerFinished()
    }

    /// The same for an async sequence, one element at a time; an error it throws ends the bulk
    /// send after the outcomes of the elements before it.
    @inlinable
    public static func run<Elements: AsyncSequence, Job, Outcome: Sendable>(
        _ elements: Elements,
        limiter: InFlightLimiter,
        sink: BulkSink<Outcome>,
        prepare: (consuming Elements.Element, Int) -> BulkPreparation<Job, Outcome>,
        submit: ([Job]) -> Void
    ) async {
        var permits = 0
        var index = 0
        do {
            for try await element in elements {
                if permits == 0 { permits = try await limiter.acquire(maximum: 64) }
                permits -= 1
                sink.submitted(1)
                defer { index += 1 }
                switch prepare(element, index) {
                case .refused(let outcome): sink.deliver(outcome)
                case .job(let job): submit([job])
                }
            }
            limiter.release(permits)
            sink.producerFinished()
        } catch {
            limiter.release(permits)
            sink.producerFinished(error: error is CancellationError ? nil : error)
        }
    }
}
