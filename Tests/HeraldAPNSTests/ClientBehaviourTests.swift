import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import HeraldTestSupport
import InMemoryLogging
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@Suite("Client behaviour against the mock", .timeLimit(.minutes(6)))
struct ClientBehaviourTests {
    /// apns-spec §1.7: every reason, with its status.
    static let reasons: [(String, Int)] = [
        ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
        ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
        ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
        ("PayloadEmpty", 400), ("TopicDisallowed", 400), ("BadCertificate", 403), ("BadCertificateEnvironment", 403),
        ("ExpiredProviderToken", 403), ("Forbidden", 403), ("InvalidProviderToken", 403), ("MissingProviderToken", 403),
        ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403), ("BadPath", 404), ("MethodNotAllowed", 405),
        ("ExpiredToken", 410), ("Unregistered", 410), ("PayloadTooLarge", 413), ("TooManyProviderTokenUpdates", 429),
        ("TooManyRequests", 429), ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
    ]

    @Test("every APNs reason comes back to the caller with its status, as sent by the server")
    func everyReasonMapped() async throws {
        let fixture = try await MockFixture.start { configuration in
            for (index, (reason, status)) in Self.reasons.enumerated() {
                configuration.script.fail(token(index), with: .reject(status: status, reason: reason))
            }
        }
        let notifications = try batch(Self.reasons.count)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration { $0.retry = .none }) { client in
            try await sendAll(notifications, with: client)
        }
        for outcome in outcomes {
            let (reason, status) = Self.reasons[outcome.index]
            let rejection = try #require(outcome.rejection, "\(reason)")
            #expect(rejection.reason.rawValue == reason)
            #expect(rejection.reason != .unknown(reason), "\(reason) is a known reason")
            #expect(rejection.status == status)
            #expect(rejection.origin == .server)
            #expect(rejection.apnsID == notifications[outcome.index].headers.apnsID?.uuidString.lowercased())
        }
        try await fixture.stop()
    }

    @Test("the mock answers every known reason with the status the client expects for it: one table, APNSReason.status")
    func mockAndClientAgree() async throws {
        let reasons = APNSReason.allKnown
        let fixture = try await MockFixture.start { configuration in
            for (index, reason) in reasons.enumerated() { configuration.script.fail(token(index), with: .reject(reason)) }
        }
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration { $0.retry = .none }) { client in
            try await sendAll(try batch(reasons.count), with: client)
        }
        for outcome in outcomes {
            let reason = reasons[outcome.index]
            let rejection = try #require(outcome.rejection, "\(reason)")
            #expect(rejection.reason == reason)
            #expect(rejection.status == reason.status, "\(reason): the mock sent \(rejection.status)")
        }
        try await fixture.stop()
    }

    @Test("410 Unregistered reaches the caller with the token's timestamp (field-lessons #11)")
    func unregisteredTimestamp() async throws {
        let since = Date(timeIntervalSince1970: 1_700_000_123.456)
        let fixture = try await MockFixture.start { $0.script.unregister(token(5), since: since) }
        let error = await #expect(throws: APNSError.self) {
            try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
                try await client.send(notification(to: token(5)))
            }
        }
        #expect(error?.reason == .unregistered)
        #expect(error?.status == 410)
        #expect(error?.reason.invalidatesToken == true)
        let timestamp = try #require(error?.timestamp)
        #expect(abs(timestamp.timeIntervalSince1970 - since.timeIntervalSince1970) < 0.001)
        try await fixture.stop()
    }

    @Test("one JWT per (team, key) for 4 connections and 10 000 sends (field-lessons #1, #7)")
    func oneTokenManyConnections() async throws {
        let fixture = try await MockFixture.start()
        let issuer = ProviderTokenIssuer.shared(for: fixture.key)
        let notifications = try batch(10_000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.pool.maximumConnections = 4
            $0.pool.maximumInFlight = 400
        }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil })
        #expect(fixture.server.connectionCount == 4)
        #expect(fixture.server.providerTokenCount == 1)
        #expect(issuer.tokensMinted == 1)
        #expect(Set(fixture.server.accepted.map(\.connection)).count == 4, "the work was spread over the 4 connections")
        try await fixture.stop()
    }

    @Test("a huge lazy sequence: sending never runs ahead of the in-flight bound (field-lessons #4)")
    func backPressure() async throws {
        let fixture = try await MockFixture.start { $0.recordLimit = 0 }
        let bound = 100
        let produced = SharedCounter()
        let payload = try Payload(aps: APS(alert: "x")).encode()
        let headers = PushHeaders(pushType: .alert, topic: MockFixture.topic)
        let tokens = try (0..<64).map { try DeviceToken(token($0)) }
        let notifications = CountingSequence(count: 30_000, produced: produced) { index in
            PushNotification(token: tokens[index % tokens.count], headers: headers, payload: payload)
        }
        var consumed = 0
        var largestLead = 0
        try await withAPNSClient(configuration: fixture.clientConfiguration { $0.pool.maximumInFlight = bound }) { client in
            for try await outcome in client.send(contentsOf: notifications) {
                #expect(outcome.response != nil)
                consumed += 1
                largestLead = max(largestLead, produced.value - consumed)
            }
        }
        #expect(consumed == 30_000)
        // Taken from the sequence but not yet consumed: at most the bound in flight plus the bound
        // in outcomes waiting to be taken, whatever the length of the sequence.
        #expect(largestLead <= 2 * bound, "lead \(largestLead)")
        #expect(largestLead >= bound / 2, "the bound was actually used, lead \(largestLead)")
        #expect(fixture.server.acceptedCount == 30_000)
        try await fixture.stop()
    }

    @Test("an async sequence source: notifications arriving over time, one outcome each")
    func asyncSequenceSource() async throws {
        let fixture = try await MockFixture.start { $0.script.fail(token(7), with: .reject(.badDeviceToken)) }
        let notifications = try batch(300)
        let (stream, continuation) = AsyncStream<PushNotification>.makeStream()
        let feeder = Task {
            for (index, notification) in notifications.enumerated() {
                continuation.yield(notification)
                if index % 50 == 49 { try? await Task.sleep(for: .milliseconds(20)) }  // arrives in bursts
            }
            continuation.finish()
        }
        var outcomes: [APNSOutcome] = []
        try await withAPNSClient(configuration: fixture.clientConfiguration { $0.retry = .none }) { client in
            for try await outcome in client.send(contentsOf: stream) { outcomes.append(outcome) }
        }
        await feeder.value
        #expect(outcomes.count == 300)
        #expect(Set(outcomes.map(\.index)) == Set(0..<300))
        #expect(outcomes.first { $0.index == 7 }?.rejection?.reason == .badDeviceToken)
        #expect(outcomes.filter { $0.response != nil }.count == 299)
        try await fixture.stop()
    }

    @Test("a bulk send checks headers it shares once, and every notification whose headers differ, or whose payload is too large")
    func sharedHeadersChecked() async throws {
        let fixture = try await MockFixture.start()
        let payload = try Payload(aps: APS(alert: "x")).encode()
        let tooLarge = EncodedPayload(unchecked: Array(repeating: UInt8(ascii: " "), count: PushType.alert.maximumPayloadSize + 1))
        let shared = PushHeaders(pushType: .alert, topic: MockFixture.topic, collapseID: "shared")
        var empty = shared
        empty.collapseID = ""  // a new fields object: checked, and refused
        var long = shared
        long.collapseID = String(repeating: "c", count: PushHeaders.maximumCollapseIDSize + 1)
        var background = shared
        background.pushType = .background
        background.priority = .immediate  // refused: background pushes must have priority 5
        let plan: [(PushHeaders, EncodedPayload, APNSReason?)] = [
            (shared, payload, nil), (shared, payload, nil), (empty, payload, .badCollapseId), (shared, payload, nil),
            (long, payload, .badCollapseId), (long, payload, .badCollapseId), (shared, tooLarge, .payloadTooLarge),
            (shared, payload, nil), (background, payload, .badPriority), (shared, payload, nil),
        ]
        let notifications = try plan.enumerated().map { index, step in
            PushNotification(token: try DeviceToken(token(index)), headers: step.0, payload: step.1)
        }
        var outcomes: [Int: APNSOutcome] = [:]
        try await withAPNSClient(configuration: fixture.clientConfiguration { $0.retry = .none }) { client in
            for try await outcome in client.send(contentsOf: notifications) { outcomes[outcome.index] = outcome }
        }
        #expect(outcomes.count == plan.count)
        for (index, step) in plan.enumerated() {
            if let reason = step.2 {
                #expect(outcomes[index]?.rejection?.reason == reason, "notification \(index)")
                #expect(outcomes[index]?.rejection?.origin == .local, "notification \(index)")
            } else {
                #expect(outcomes[index]?.response != nil, "notification \(index)")
            }
        }
        #expect(fixture.server.acceptedCount == plan.filter { $0.2 == nil }.count)
        try await fixture.stop()
    }

    @Test("stopping the iteration early stops sending; what was sent still completes")
    func abandonedIteration() async throws {
        let fixture = try await MockFixture.start()
        let notifications = try batch(5000)
        try await withAPNSClient(configuration: fixture.clientConfiguration { $0.pool.maximumInFlight = 50 }) { client in
            var taken = 0
            for try await _ in client.send(contentsOf: notifications) {
                taken += 1
                if taken == 100 { break }
            }
        }
        // Shutdown drained what was in flight; nothing near the 5000 was sent.
        #expect(fixture.server.acceptedCount >= 100)
        #expect(fixture.server.acceptedCount <= 100 + 2 * 50 + 256)
        try await fixture.stop()
    }

    @Test("send suspends at the in-flight bound instead of queueing without limit")
    func sendSuspends() async throws {
        let fixture = try await MockFixture.start {
            // Each answer waits 2 s: far longer than the check below can be held up by a loaded CPU.
            $0.script.randomFaults = .init(rate: 1, seed: 3, faults: [.delay(.seconds(2))])
        }
        let client = try APNSClient(configuration: fixture.clientConfiguration { $0.pool.maximumInFlight = 5; $0.pool.maximumConnections = 1 })
        let started = SharedCounter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<20 {
                group.addTask {
                    let n = try notification(to: token(i))
                    started.increment()
                    _ = try await client.send(n)
                }
            }
            // Five requests reach the server, and the other 15 callers are suspended in send.
            try await fixture.server.requests(atLeast: 5)
            #expect(await eventually { client.waitingSends == 15 })
            #expect(started.value == 20)
            #expect(fixture.server.requestCount == 5)
            try await group.waitForAll()
        }
        #expect(fixture.server.acceptedCount == 20)
        await client.shutdown()
        try await fixture.stop()
    }

    @Test("shutdown drains what is in flight, then refuses new sends")
    func gracefulShutdown() async throws {
        let fixture = try await MockFixture.start {
            $0.script.randomFaults = .init(rate: 1, seed: 5, faults: [.delay(.seconds(2))])
        }
        let client = try APNSClient(configuration: fixture.clientConfiguration())
        let notifications = try batch(200)
        async let outcomes = sendAll(notifications, with: client)
        // All 200 are at the server, held there for 2 s each.
        try await fixture.server.requests(atLeast: 200)
        #expect(fixture.server.acceptedCount < 200, "still in flight")
        await client.shutdown()
        #expect(fixture.server.acceptedCount == 200, "shutdown waited for every answer")
        let results = try await outcomes
        #expect(results.allSatisfy { $0.response != nil })
        let error = await #expect(throws: APNSClientError.self) { try await client.send(notification(to: token(1))) }
        #expect(error?.code == .shutdown)
        #expect(client.connectionCount == 0)
        try await fixture.stop()
    }

    @Test("as a swift-service-lifecycle Service it runs until graceful shutdown")
    func service() async throws {
        let fixture = try await MockFixture.start()
        let client = try APNSClient(configuration: fixture.clientConfiguration())
        let group = ServiceGroup(configuration: .init(services: [client], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            _ = try await client.send(notification(to: token(1)))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let error = await #expect(throws: APNSClientError.self) { try await client.send(notification(to: token(2))) }
        #expect(error?.code == .shutdown)
        try await fixture.stop()
    }

    @Test("shutdown closes every connection, even one that finishes its setup after the work is done")
    func shutdownClosesLateConnections() async throws {
        let fixture = try await MockFixture.start()
        // Many requests at once make the pool open a second connection, which may come up late.
        try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<500 { group.addTask { _ = try await client.send(try notification(to: token(index))) } }
                try await group.waitForAll()
            }
        }
        try await fixture.server.openConnections(atMost: 0)
        try await fixture.stop()
    }

    @Test("logs carry the apns-id and never a secret")
    func loggingWithoutSecrets() async throws {
        let fixture = try await MockFixture.start { $0.script.fail(token(2), with: .reject(.badDeviceToken)) }
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in logs })
        logger.logLevel = .trace
        let id = UUID()
        try await withAPNSClient(configuration: fixture.clientConfiguration(), logger: logger) { client in
            _ = try await client.send(notification(to: token(1), apnsID: id), logger: logger)
            _ = try? await client.send(notification(to: token(2)), logger: logger)
        }
        let entries = logs.entries
        #expect(!entries.isEmpty)
        #expect(entries.contains { $0.metadata["apns-id"]?.description == id.uuidString.lowercased() })
        let providerToken = try ProviderTokenIssuer.shared(for: fixture.key).currentToken()
        let signature = String(providerToken.jwt.split(separator: ".")[2])
        let keyMaterial = String(fixture.key.pemRepresentation.split(separator: "\n")[1])
        for entry in entries {
            let text = "\(entry.message) \(entry.metadata)"
            #expect(!text.contains(signature))
            #expect(!text.contains(providerToken.jwt))
            #expect(!text.contains(keyMaterial))
        }
        try await fixture.stop()
    }

    @Test("sandbox answers carry apns-unique-id; the apns-id sent is echoed")
    func sandboxUniqueID() async throws {
        let fixture = try await MockFixture.start { $0.sandbox = true }
        let id = UUID()
        let response = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await client.send(notification(to: token(1), apnsID: id))
        }
        #expect(response.apnsID == id.uuidString.lowercased())
        #expect(response.apnsUniqueID?.count == 36)
        try await fixture.stop()
    }

    @Test("ids the mock makes up are version-4 UUIDs in lower case, all different, like APNs's")
    func madeUpIDs() async throws {
        let fixture = try await MockFixture.start { $0.sandbox = true }
        let notifications = try (0..<2000).map { try notification(to: token($0)) }  // no apns-id sent
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await sendAll(notifications, with: client)
        }
        let ids = outcomes.compactMap(\.response).flatMap { [$0.apnsID, $0.apnsUniqueID ?? ""] }
        #expect(ids.count == 4000)
        #expect(Set(ids).count == 4000)
        for id in ids.prefix(200) {
            let characters = Array(id)
            #expect(UUID(uuidString: id) != nil && id == id.lowercased(), "\(id)")
            #expect(characters.count == 36 && characters[14] == "4" && "89ab".contains(characters[19]), "\(id)")
        }
        try await fixture.stop()
    }

    @Test("local validation refuses before sending, with APNs's reason")
    func localValidation() async throws {
        let fixture = try await MockFixture.start()
        try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            var voip = try notification(to: token(1))
            voip.headers.pushType = .voip  // the topic lacks .voip
            let error = await #expect(throws: APNSError.self) { try await client.send(voip) }
            #expect(error?.reason == .badTopic)
            #expect(error?.origin == .local)
            var noTopic = try notification(to: token(1))
            noTopic.headers.topic = nil
            let missing = await #expect(throws: APNSError.self) { try await client.send(noTopic) }
            #expect(missing?.reason == .missingTopic)
            // In bulk, a refused notification gets its outcome like any other.
            let outcomes = try await sendAll([voip, try notification(to: token(2))], with: client)
            #expect(outcomes.first { $0.index == 0 }?.rejection?.reason == .badTopic)
            #expect(outcomes.first { $0.index == 0 }?.attempts == 0)
            #expect(outcomes.first { $0.index == 1 }?.response != nil)
        }
        #expect(fixture.server.requestCount == 1)
        try await fixture.stop()
    }

    @Test("a token from an unregistered key is InvalidProviderToken, final at once")
    func invalidProviderToken() async throws {
        let fixture = try await MockFixture.start()
        let stranger = ProviderKey.generate(keyID: "STRANGER01", teamID: "HERALDTEAM")
        let error = await #expect(throws: APNSError.self) {
            try await withAPNSClient(configuration: fixture.clientConfiguration { $0.credentials = .providerToken(stranger) }) { client in
                try await client.send(notification(to: token(1)))
            }
        }
        #expect(error?.reason == .invalidProviderToken)
        #expect(fixture.server.requestCount == 1)
        try await fixture.stop()
    }
}

/// A sequence that makes its elements on demand and counts how many were taken.
struct CountingSequence: Sequence, Sendable {
    let count: Int
    let produced: SharedCounter
    let make: @Sendable (Int) -> PushNotification

    struct Iterator: IteratorProtocol {
        var index = 0
        let sequence: CountingSequence
        mutating func next() -> PushNotification? {
            guard index < sequence.count else { return nil }
            defer { index += 1 }
            sequence.produced.increment()
            return sequence.make(index)
        }
    }

    func makeIterator() -> Iterator { Iterator(sequence: self) }
}

/// A counter shared between tasks.
final class SharedCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.wrappingAdd(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
