import Foundation
import HeraldDeviceKit
import Synchronization
import Testing

@Suite("Flushing receipts to the gateway", .timeLimit(.minutes(1)))
struct FlushTests {
    let scratch: Scratch
    let clock = TestClock()

    init() throws { scratch = try Scratch() }

    func reporter(_ transport: ScriptedTransport, retry: HeraldReceipts.Retry = .standard) -> HeraldReceipts {
        HeraldReceipts(configuration: .init(gateway: gatewayURL, directory: scratch.url, retry: retry), transport: transport, now: clock.function)
    }

    func record(_ reporter: HeraldReceipts, count: Int) throws {
        for number in 0..<count { try reporter.record(receivedEvent(number, date: clock.now)) }
    }

    @Test("One event is POSTed to {gateway}/v1/receipts as JSON")
    func requestShape() async throws {
        let transport = ScriptedTransport(status: 202)
        let receipts = reporter(transport)
        let report = try await receipts.report(HeraldEvent(.clicked(action: "reply"), receipt: HeraldReceipt(token: "AQAB")!))
        #expect(report.taken == 1 && report.requests == 1 && report.pending == 0 && report.retryAt == nil)
        let request = try #require(transport.requests.first)
        #expect(request.method == .post)
        #expect(request.url.absoluteString == "https://push.example.com/herald/v1/receipts")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"events":[{"action":"reply","event":"clicked","receipt":"AQAB"}]}"#)
        #expect(try receipts.queue.pending().isEmpty)
    }

    @Test("250 events go in requests of at most 100, oldest first")
    func batching() async throws {
        let transport = ScriptedTransport(status: 202)
        let receipts = reporter(transport)
        try record(receipts, count: 250)
        let report = try await receipts.flush()
        #expect(report.taken == 250)
        #expect(report.pending == 0)
        #expect(transport.requests.map(\.events.count) == [100, 100, 50])
        #expect(transport.requests.flatMap(\.events).map(\.receipt) == (0..<250).map { "r\($0)" })
        #expect(transport.requests.flatMap(\.events).allSatisfy { $0.event == "received" && $0.action == nil })
        #expect(try receipts.queue.pending().isEmpty)
    }

    @Test("A smaller configured batch size is honoured; a larger one is cut to 100")
    func batchSize() {
        #expect(HeraldReceipts.Configuration(gateway: gatewayURL, directory: scratch.url, batchSize: 500).batchSize == 100)
        #expect(HeraldReceipts.Configuration(gateway: gatewayURL, directory: scratch.url, batchSize: 0).batchSize == 1)
    }

    @Test("After a 503 with Retry-After the events stay, and nothing is sent until it has passed")
    func retryAfter() async throws {
        let transport = ScriptedTransport { _, index in
            index == 0 ? HeraldResponse(status: 503, headers: ["Retry-After": "120"]) : HeraldResponse(status: 202)
        }
        let receipts = reporter(transport)
        try record(receipts, count: 3)

        let failed = try await receipts.flush()
        #expect(failed.taken == 0)
        #expect(failed.pending == 3)
        #expect(failed.retryAt == clock.now.addingTimeInterval(120))

        clock.advance(seconds: 119)
        let early = try await receipts.flush()
        #expect(early.requests == 0)
        #expect(early.retryAt == failed.retryAt)
        // The back-off is in the queue's file: another process (the extension) waits as well.
        let other = reporter(transport)
        #expect(try await other.flush().requests == 0)
        #expect(transport.requests.count == 1)

        clock.advance(seconds: 1)
        let retried = try await receipts.flush()
        #expect(retried.taken == 3)
        #expect(retried.retryAt == nil)
        #expect(try receipts.queue.pending().isEmpty)
    }

    @Test("Failures in a row back off exponentially, with jitter that only shortens the wait, up to the maximum")
    func exponentialBackoff() async throws {
        let transport = ScriptedTransport(status: 503)
        let receipts = reporter(transport, retry: .init(initial: .seconds(1), maximum: .seconds(16), jitter: 0.2))
        try record(receipts, count: 1)
        var waits: [TimeInterval] = []
        for _ in 0..<7 {
            let report = try await receipts.flush()
            let retryAt = try #require(report.retryAt)
            waits.append(retryAt.timeIntervalSince(clock.now))
            clock.advance(seconds: retryAt.timeIntervalSince(clock.now))
        }
        let expected: [TimeInterval] = [1, 2, 4, 8, 16, 16, 16]
        for (wait, full) in zip(waits, expected) { #expect(wait > full * 0.8 - 1e-6 && wait <= full + 1e-6) }
        #expect(transport.requests.count == 7)
        #expect(try receipts.queue.pending().count == 1)
    }

    @Test("429, other statuses and network failures keep the events and back off", arguments: [429, 500, 502, 404, 401])
    func keptOnFailure(status: Int) async throws {
        let transport = ScriptedTransport(status: status)
        let receipts = reporter(transport)
        try record(receipts, count: 2)
        let report = try await receipts.flush()
        #expect(report.pending == 2)
        #expect(report.dropped == 0)
        #expect(report.retryAt != nil)
    }

    @Test("A network failure keeps the events and backs off")
    func networkFailure() async throws {
        let transport = ScriptedTransport { _, _ in throw Unreachable() }
        let receipts = reporter(transport)
        try record(receipts, count: 2)
        let report = try await receipts.flush()
        #expect(report.pending == 2)
        #expect(report.retryAt != nil)
        #expect(try receipts.queue.pending().count == 2)
    }

    @Test("400 and 403 drop the batch without retrying", arguments: [400, 403])
    func dropped(status: Int) async throws {
        let transport = ScriptedTransport(status: status)
        let receipts = reporter(transport)
        try record(receipts, count: 150)
        let report = try await receipts.flush()
        #expect(report.dropped == 150)
        #expect(report.retryAt == nil)
        #expect(transport.requests.count == 2)
        #expect(try receipts.queue.pending().isEmpty)
    }

    @Test("Events a 202 lists as refused are dropped, the rest taken")
    func partlyRefused() async throws {
        let transport = ScriptedTransport { _, _ in
            HeraldResponse(status: 202, body: Data(#"{"taken":2,"refused":[{"index":1,"error":"unknown receipt"},{"index":9,"error":"?"}]}"#.utf8))
        }
        let receipts = reporter(transport)
        try record(receipts, count: 3)
        let report = try await receipts.flush()
        #expect(report.taken == 2)
        #expect(report.dropped == 1)
        #expect(try receipts.queue.pending().isEmpty)
    }

    @Test("413 splits the batch in halves until it fits; a single event still too large is dropped")
    func split() async throws {
        let transport = ScriptedTransport { request, _ in
            let events = request.events
            if events.contains(where: { $0.receipt == "r7" }) && events.count == 1 { return HeraldResponse(status: 413) }
            return HeraldResponse(status: events.count > 25 ? 413 : 202)
        }
        let receipts = reporter(transport)
        try record(receipts, count: 100)
        let report = try await receipts.flush()
        // 100 → 413; 2 × 50 → 413; 4 × 25: the one with r7 is taken whole (25 ≤ 25).
        #expect(transport.requests.map(\.events.count) == [100, 50, 25, 25, 50, 25, 25])
        #expect(report.taken == 100)
        #expect(try receipts.queue.pending().isEmpty)

        let single = reporter(transport)
        try single.record(receivedEvent(7, date: clock.now))
        let alone = try await single.flush()
        #expect(alone.dropped == 1)
        #expect(alone.retryAt == nil)
    }

    @Test("A 503 halfway through a split keeps what was not taken")
    func failureInSplit() async throws {
        let transport = ScriptedTransport { _, index in
            switch index {
            case 0: HeraldResponse(status: 413)
            case 1: HeraldResponse(status: 202)
            default: HeraldResponse(status: 503)
            }
        }
        let receipts = reporter(transport)
        try record(receipts, count: 10)
        let report = try await receipts.flush()
        #expect(report.taken == 5)
        #expect(report.pending == 5)
        #expect(report.retryAt != nil)
        #expect(try receipts.queue.pending().map(\.receipt.token) == (5..<10).map { "r\($0)" })
    }

    @Test("While one flush sends, another (the app's or the extension's) leaves the queue to it")
    func oneFlushAtATime() async throws {
        let other = Locked<HeraldReceipts?>(nil)
        let nested = Locked<HeraldFlushReport?>(nil)
        let transport = ScriptedTransport { _, _ in
            // Flush the same queue from inside the first flush's request.
            if let receipts = other.value { nested.value = try await receipts.flush() }
            return HeraldResponse(status: 202)
        }
        other.value = reporter(ScriptedTransport(status: 202))
        let receipts = reporter(transport)
        try record(receipts, count: 3)
        let report = try await receipts.flush()
        #expect(report.taken == 3)
        let inner = try #require(nested.value)
        #expect(inner.flushingElsewhere)
        #expect(inner.requests == 0)

        // The first flush's hold ended with it: the next one sends.
        other.value = nil
        try receipts.record(receivedEvent(9, date: clock.now))
        #expect(try await receipts.flush().taken == 1)
    }

    @Test("A flush that stalls (a killed extension) holds the queue only until its lease expires")
    func expiredLease() async throws {
        let clock = clock
        let other = Locked<HeraldReceipts?>(nil)
        let nested = Locked<HeraldFlushReport?>(nil)
        let stalled = ScriptedTransport { _, _ in
            clock.advance(seconds: 61)
            if let receipts = other.value { nested.value = try await receipts.flush() }
            return HeraldResponse(status: 202)
        }
        other.value = reporter(ScriptedTransport(status: 202))
        let receipts = reporter(stalled)
        try record(receipts, count: 2)
        _ = try await receipts.flush()
        let inner = try #require(nested.value)
        #expect(!inner.flushingElsewhere)
        #expect(inner.taken == 2)
        #expect(try receipts.queue.pending().isEmpty)
    }
}
