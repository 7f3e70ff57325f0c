import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import InMemoryLogging
import Logging
import Testing

/// field-lessons rows 3, 5, 6 and 12: every fault ends with exactly one final outcome per
/// notification, and every accepted notification is counted by the mock.
@Suite("Faults: every notification gets exactly one outcome", .timeLimit(.minutes(6)))
struct FaultTests {
    @Test("GOAWAY mid-batch: streams above its last-stream-id are re-sent on a fresh connection, the reason logged (field-lessons #5)")
    func goAwayMidBatch() async throws {
        let fixture = try await MockFixture.start { configuration in
            configuration.script.goAwayAfterStreams = (300, "Shutdown")
            configuration.script.connectionEventsForFirstConnections = 1
        }
        let notifications = try batch(2000)
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in logs })
        logger.logLevel = .notice
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration { $0.pool.maximumConnections = 2; $0.pool.maximumInFlight = 200 }, logger: logger) { client in
            try await sendAll(notifications, with: client)
        }
        let goAway = logs.entries.first { $0.message.description == "APNs sent GOAWAY" }
        #expect(goAway?.metadata["reason"]?.description == #"{"reason":"Shutdown"}"#)
        #expect(outcomes.allSatisfy { $0.response != nil })
        // Unprocessed streams are re-sent, not duplicated: the mock accepted each exactly once.
        #expect(fixture.server.acceptedCount == notifications.count)
        #expect(Set(fixture.server.accepted.map(\.apnsID)).count == notifications.count)
        #expect(fixture.server.connectionCount >= 2)
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("a dropped TCP connection mid-batch: its unanswered notifications are re-sent elsewhere")
    func droppedConnection() async throws {
        let fixture = try await MockFixture.start { configuration in
            configuration.script.dropConnectionAfterStreams = 500
            configuration.script.connectionEventsForFirstConnections = 1
        }
        let notifications = try batch(2000)
        // One connection at a time, so the first one surely reaches its 501st stream and is
        // dropped (spread over several, it may never get that far).
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.pool.maximumInFlight = 200
            $0.pool.maximumConnections = 1
        }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil })
        #expect(fixture.server.connectionCount >= 2, "the first connection was dropped and replaced")
        #expect(outcomes.contains { $0.attempts == 2 }, "the notifications in flight on the dropped connection were sent again")
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("hung responses: each request has a deadline; a retry succeeds, or it fails as timed out (field-lessons #3)")
    func hungResponses() async throws {
        let fixture = try await MockFixture.start { configuration in
            for i in 0..<10 { configuration.script.fail(token(i), with: .noResponse, times: 1) }
            for i in 10..<15 { configuration.script.fail(token(i), with: .noResponse) }
        }
        let notifications = try batch(1000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            // The deadline counts from when a notification is queued. One connection, opened
            // before the batch, so no notification waits for a TLS handshake that other suites
            // loading the CPU can stretch past the deadline.
            $0.timeouts.request = .seconds(5)
            $0.retry.maximumAttempts = 3
            $0.pool.maximumConnections = 1
        }) { client in
            _ = try await client.send(try notification(to: token(5000)))
            return try await sendAll(notifications, with: client)
        }
        for outcome in outcomes {
            switch outcome.index {
            case 0..<10:
                #expect(outcome.response != nil && outcome.attempts == 2, "\(outcome.index): \(outcome.result)")
            case 10..<15:
                #expect(outcome.failure?.code == .timedOut && outcome.attempts == 3, "\(outcome.index): \(outcome.result)")
            default:
                #expect(outcome.response != nil, "\(outcome.index): \(outcome.result)")
            }
        }
        #expect(outcomes.filter { $0.attempts == 1 }.count >= 900, "answered notifications are not retried")
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("a 503 storm: retried with back-off; each ends accepted or rejected after the last attempt (field-lessons #12)")
    func serviceUnavailableStorm() async throws {
        let fixture = try await MockFixture.start { configuration in
            configuration.script.randomFaults = .init(rate: 0.3, seed: 42, faults: [.reject(.serviceUnavailable), .reject(.shutdown), .reject(.internalServerError)])
        }
        let notifications = try batch(2000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await sendAll(notifications, with: client)
        }
        var retried = 0
        for outcome in outcomes {
            if outcome.attempts > 1 { retried += 1 }
            if let rejection = outcome.rejection {
                #expect([.serviceUnavailable, .shutdown, .internalServerError].contains(rejection.reason))
                #expect(outcome.attempts == 5, "rejected only after the last attempt")
            } else {
                #expect(outcome.response != nil, "\(outcome.result)")
            }
        }
        #expect(retried > 300, "about 30% of first attempts fail and are retried")
        #expect(outcomes.filter { $0.response != nil }.count > 1950)
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("the stream limit drops to 1 mid-connection and rises again: the budget follows it (field-lessons #6)")
    func streamLimitDropsToOne() async throws {
        let fixture = try await MockFixture.start { configuration in
            // Answers are held 5 ms, so the server sees how many streams the client keeps open.
            configuration.script.randomFaults = .init(rate: 1, seed: 7, faults: [.delay(.milliseconds(5))])
            configuration.script.streamLimitChanges = [(afterStreams: 100, limit: 1), (afterStreams: 300, limit: 100)]
        }
        let notifications = try batch(1000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration { $0.pool.maximumConnections = 1; $0.pool.maximumInFlight = 100 }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil })
        #expect(fixture.server.acceptedCount == notifications.count)
        // While the limit was 1, every new stream was the only one open; then up to 100 again.
        let peaks = fixture.server.peakStreamsByLimit
        #expect(peaks[1] == 1, "\(peaks)")
        #expect((peaks[100] ?? 0) > 1 && (peaks[100] ?? 0) <= 100, "\(peaks)")
        #expect(fixture.server.refusedStreamCount == 0, "the client never went over the limit")
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("ExpiredProviderToken: a new JWT, one retry, the connection recycled (field-lessons #2)")
    func expiredProviderToken() async throws {
        let fixture = try await MockFixture.start()
        let clock = FirstMintInThePast()
        let issuer = ProviderTokenIssuer(key: fixture.key, clock: clock)
        let notifications = try batch(2000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration { $0.credentials = .providerTokens(issuer) }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil }, "\(outcomes.first { $0.response == nil }?.result as Any)")
        #expect(issuer.tokensMinted == 2, "one stale token, one renewal: never a token per request")
        #expect(fixture.server.rejectionsByReason["ExpiredProviderToken"] ?? 0 >= 1)
        #expect(fixture.server.connectionCount >= 2, "the connection that saw the stale token was replaced")
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("an answer before the request body was read, then RST_STREAM(NO_ERROR): it counts, nothing is re-sent")
    func answerBeforeBody() async throws {
        let fixture = try await MockFixture.start { configuration in
            configuration.script.randomFaults = .init(rate: 1, seed: 1, faults: [.answerBeforeBody])
        }
        let notifications = try batch(1000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil && $0.attempts == 1 })
        #expect(fixture.server.requestCount == notifications.count, "no request was sent twice")
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("REFUSED_STREAM: the notification is sent again, and it does not count as an attempt (field-lessons #6)")
    func refusedStream() async throws {
        let fixture = try await MockFixture.start { configuration in
            for i in 0..<20 { configuration.script.fail(token(i), with: .refuseStream, times: 1) }
        }
        let notifications = try batch(500)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil && $0.attempts == 1 })
        #expect(fixture.server.refusedStreamCount == 20)
        #expect(fixture.server.acceptedCount == 500)
        fixture.expectDelivered(outcomes)
        try await fixture.stop()
    }

    @Test("connections are rolled before their stream IDs run out")
    func rolling() async throws {
        let fixture = try await MockFixture.start()
        let notifications = try batch(500)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.pool.maximumStreamsPerConnectionLifetime = 100
            $0.pool.maximumConnections = 2
        }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil })
        #expect(fixture.server.connectionCount >= 5)
        try await fixture.stop()
    }
}

/// A clock whose first reading is two hours old, as after a stale cache or a skewed clock:
/// the first token is expired in APNs's eyes, the renewal is not.
final class FirstMintInThePast: ProviderTokenClock, @unchecked Sendable {
    private let lock = NSLock()
    private var first = true
    private let system = SystemProviderTokenClock()

    func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        if first {
            first = false
            return Date().addingTimeInterval(-7200)
        }
        return Date()
    }

    func uptime() -> Duration { system.uptime() }
}
