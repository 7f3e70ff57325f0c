@_spi(HeraldFlow) import HeraldFlow
import HeraldTestSupport
import Synchronization
import Testing

/// A stand-in for the client: jobs it is handed wait in `pending` until the test answers them,
/// as connections would.
private final class FakeClient: Sendable {
    let pending = Shared<[(index: Int, sink: BulkSink<String>)]>([])

    var count: Int { pending.withLock { $0.count } }

    /// Answers the oldest `count` jobs, all of one sink's at once (as one read of a connection
    /// would): a consumer waiting in `take()` gets them together, never a first part of them
    /// depending on how the threads are scheduled.
    func answer(_ count: Int) {
        let answered = pending.withLock { pending in
            let taken = Array(pending.prefix(count))
            pending.removeFirst(taken.count)
            return taken
        }
        var start = answered.startIndex
        while start < answered.endIndex {
            let sink = answered[start].sink
            let end = answered[start...].firstIndex { $0.sink !== sink } ?? answered.endIndex
            sink.deliver(contentsOf: answered[start..<end].map { "sent \($0.index)" })
            start = end
        }
    }
}

private struct Failure: Error, Equatable {}

@Suite("Bulk sends: producer, sink and iterator", .timeLimit(.minutes(6)))
struct BulkFlowTests {
    /// A bulk send of `elements`; element `refuse` is refused before sending.
    private static func bulk(
        _ elements: some Sequence<Int> & Sendable, limiter: InFlightLimiter, client: FakeClient, refuse: Int? = nil
    ) -> BulkSend<String> {
        BulkSend(limiter: limiter) { sink in
            await BulkProducer.run(
                elements, limiter: limiter, sink: sink, batch: 4,
                prepare: { element, index in element == refuse ? .refused("refused \(index)") : .job(index) },
                submit: { jobs in client.pending.withLock { $0.append(contentsOf: jobs.map { ($0, sink) }) } }
            )
        }
    }

    @Test("every element gets exactly one outcome, refused ones included, and every permit comes back")
    func oneOutcomeEach() async throws {
        let limiter = InFlightLimiter(limit: 8)
        let client = FakeClient()
        let answering = Task {
            // Answer whatever is in flight, until the 99 elements sent were answered.
            var answered = 0
            return await eventually {
                let waiting = client.count
                client.answer(waiting)
                answered += waiting
                return answered == 99
            }
        }
        var outcomes: [String] = []
        var iterator = Self.bulk(0..<100, limiter: limiter, client: client, refuse: 7).makeIterator()
        while let outcome = try await iterator.next() { outcomes.append(outcome) }
        #expect(await answering.value)
        #expect(outcomes.count == 100)
        #expect(Set(outcomes).count == 100)
        #expect(outcomes.contains("refused 7"))
        #expect(limiter.available == 8)
    }

    @Test("a consumer that does not take outcomes holds the producer at the bound")
    func slowConsumerHoldsTheProducer() async throws {
        let limiter = InFlightLimiter(limit: 8)
        let client = FakeClient()
        let proceed = Shared(false)
        let consumer = Task {
            var iterator = Self.bulk(0..<1000, limiter: limiter, client: client).makeIterator()
            let first = try await iterator.next()
            _ = await eventually { proceed.withLock { $0 } }
            return first
        }
        #expect(await eventually { client.count == 8 })
        client.answer(8)
        // The consumer took those 8 outcomes, which gave their permits back: 8 more go out, then
        // the producer waits for a permit.
        #expect(await eventually { client.count == 8 && limiter.waiting == 1 })
        client.answer(8)
        // Answered but not taken: their permits stay held, so nothing more is sent.
        #expect(client.count == 0)
        #expect(limiter.available == 0 && limiter.waiting == 1)
        proceed.withLock { $0 = true }
        #expect(try await consumer.value == "sent 0")
        // The consumer stopped: the producer is cancelled and the untaken outcomes' permits come back.
        #expect(await eventually { limiter.waiting == 0 && limiter.available == 8 })
    }

    @Test("an iteration abandoned midway stops the producer, and outcomes still in flight give their permits back")
    func abandonedIteration() async throws {
        let limiter = InFlightLimiter(limit: 8)
        let client = FakeClient()
        let consumer = Task {
            var iterator = Self.bulk(0..., limiter: limiter, client: client).makeIterator()
            return try await iterator.next()
        }
        #expect(await eventually { client.count == 8 })
        client.answer(1)
        #expect(try await consumer.value == "sent 0")
        // The iterator is gone: the producer stops, and answers to the jobs still in flight
        // release their permits on arrival.
        #expect(await eventually { limiter.waiting == 0 })
        #expect(await eventually {
            client.answer(client.count)
            return limiter.available == 8
        })
        #expect(client.count == 0)
    }

    @Test("an async sequence that throws ends the send with its error, after the outcomes of what came before")
    func asyncSequenceError() async throws {
        let limiter = InFlightLimiter(limit: 8)
        let client = FakeClient()
        let elements = AsyncThrowingStream<Int, any Error> { continuation in
            for element in 0..<3 { continuation.yield(element) }
            continuation.finish(throwing: Failure())
        }
        let send = BulkSend<String>(limiter: limiter) { sink in
            await BulkProducer.run(
                elements, limiter: limiter, sink: sink, prepare: { _, index in .job(index) },
                submit: { jobs in client.pending.withLock { $0.append(contentsOf: jobs.map { ($0, sink) }) } }
            )
        }
        var iterator = send.makeIterator()
        let answering = Task {
            #expect(await eventually { client.count == 3 })
            client.answer(3)
        }
        var outcomes: [String] = []
        await #expect(throws: Failure.self) {
            while let outcome = try await iterator.next() { outcomes.append(outcome) }
        }
        await answering.value
        #expect(outcomes == ["sent 0", "sent 1", "sent 2"])
        #expect(limiter.available == 8)
    }

    @Test("withShutdown shuts the client down whether the body returns or throws")
    func scopedShutdown() async throws {
        let shutdowns = Shared(0)
        let value = try await withShutdown(of: 1, shutdown: { _ in shutdowns.withLock { $0 += 1 } }) { $0 + 1 }
        #expect(value == 2)
        await #expect(throws: Failure.self) {
            try await withShutdown(of: 1, shutdown: { _ in shutdowns.withLock { $0 += 1 } }) { _ in throw Failure() }
        }
        #expect(shutdowns.withLock { $0 } == 2)
    }
}
