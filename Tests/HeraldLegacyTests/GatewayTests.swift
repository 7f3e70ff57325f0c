import Foundation
import HeraldCore
import HeraldIdentity
import HeraldLegacy
import HeraldAPNSMock
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// The client against the mock gateway over real TLS with client certificates on loopback.
@Suite("Legacy client against the mock gateway", .serialized, .timeLimit(.minutes(6)))
struct GatewayTests {
    /// Sends `notifications` in bulk and returns the outcomes by index, checking there is exactly one each.
    func sendAll(_ notifications: [LegacyNotification], with client: LegacyClient) async throws -> [Int: LegacyOutcome] {
        var outcomes: [Int: LegacyOutcome] = [:]
        for try await outcome in client.send(contentsOf: notifications) {
            #expect(outcomes[outcome.index] == nil, "two outcomes for notification \(outcome.index)")
            outcomes[outcome.index] = outcome
        }
        #expect(outcomes.count == notifications.count)
        return outcomes
    }

    /// The tokens the mock accepted, with how many times each.
    func acceptedTokens(_ gateway: MockLegacyGateway) throws -> [DeviceToken: Int] {
        var counts: [DeviceToken: Int] = [:]
        for frame in gateway.accepted { counts[try DeviceToken(bytes: frame.token), default: 0] += 1 }
        return counts
    }

    @Test("10,000 notifications with errors scripted at several positions: every valid one accepted exactly once, each invalid one reported with its status")
    func tenThousandWithErrors() async throws {
        let invalidTokens: Set<Int> = [17, 2_500, 5_001, 9_999]
        let fixture = try await LegacyFixture.start { configuration in
            for number in invalidTokens { configuration.script.reject(token: legacyToken(number), with: .invalidToken) }
            // And two failures by arrival position (whatever notification arrives then).
            configuration.script.reject(position: 4_000, with: .processingError)
            configuration.script.reject(position: 7_000, with: .invalidPayloadSize)
        }
        let notifications = (0..<10_000).map { legacyNotification($0) }
        let outcomes = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.settleInterval = .seconds(6) }) { client in
            try await sendAll(notifications, with: client)
        }
        let gateway = fixture.gateway
        var rejected: [Int: LegacyStatus] = [:]
        var accepted = Set<Int>()
        for (index, outcome) in outcomes {
            switch outcome.result {
            case .accepted: accepted.insert(index)
            case .rejected(let status): rejected[index] = status
            case .failed(let error): Issue.record("notification \(index) failed: \(error)")
            }
        }
        for number in invalidTokens {
            #expect(rejected[number] == .invalidToken)
            #expect(outcomes[number]?.invalidatesToken == true)
        }
        let byPosition = rejected.filter { !invalidTokens.contains($0.key) }
        #expect(byPosition.values.sorted { $0.rawValue < $1.rawValue } == [.processingError, .invalidPayloadSize])
        #expect(accepted.count == 10_000 - 6)
        // Exactly once: the mock's exact count, and no token twice in its records.
        #expect(gateway.acceptedCount == accepted.count)
        let tokens = try acceptedTokens(gateway)
        #expect(tokens.count == accepted.count)
        #expect(tokens.values.allSatisfy { $0 == 1 })
        // What followed each error was discarded unread and sent again: each was processed once.
        #expect(gateway.receivedCount == 10_000)
        let same = Set(tokens.keys) == Set(accepted.map { legacyToken($0) })
        #expect(same, "the mock accepted other tokens than the client reported")
        // One connection, plus one after each error but the last, which has nothing after it.
        #expect(gateway.connectionCount == 6)
        try await fixture.stop()
    }

    @Test("status 10 (shutdown) mid-stream: everything after the last processed notification is sent again, each accepted once")
    func shutdownMidStream() async throws {
        let fixture = try await LegacyFixture.start { $0.script.shutdownAfterAccepted = 3_000 }
        let notifications = (0..<6_000).map { legacyNotification($0) }
        let outcomes = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.settleInterval = .seconds(6) }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.values.allSatisfy { $0.result == .accepted })
        #expect(fixture.gateway.acceptedCount == 6_000)
        #expect(try acceptedTokens(fixture.gateway).values.allSatisfy { $0 == 1 })
        #expect(fixture.gateway.connectionCount == 2)
        #expect(fixture.gateway.shutdownResponseCount == 1)
        try await fixture.stop()
    }

    @Test("shutdown on demand between sends: the client reconnects for the next ones")
    func shutdownOnDemand() async throws {
        let fixture = try await LegacyFixture.start()
        try await withLegacyClient(configuration: fixture.clientConfiguration()) { client in
            for try await outcome in client.send(contentsOf: (0..<100).map { legacyNotification($0) }) {
                #expect(outcome.result == .accepted)
            }
            fixture.gateway.sendShutdown()
            for try await outcome in client.send(contentsOf: (100..<200).map { legacyNotification($0) }) {
                #expect(outcome.result == .accepted)
            }
        }
        #expect(fixture.gateway.acceptedCount == 200)
        #expect(fixture.gateway.connectionCount == 2)
        try await fixture.stop()
    }

    @Test("a slow error response after more was sent than the buffer holds: the overflow is reported as possibly lost, never dropped")
    func bufferOverflow() async throws {
        let fixture = try await LegacyFixture.start { configuration in
            configuration.script.reject(token: legacyToken(5), with: .invalidToken)
            configuration.script.errorResponseDelay = .milliseconds(300)
        }
        let notifications = (0..<2_000).map { legacyNotification($0) }
        let outcomes = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.bufferCapacity = 10 }) { client in
            try await sendAll(notifications, with: client)
        }
        var accepted = Set<Int>()
        var lost = Set<Int>()
        for (index, outcome) in outcomes {
            switch outcome.result {
            case .accepted: accepted.insert(index)
            case .rejected(let status): #expect(index == 5 && status == .invalidToken)
            case .failed(let error):
                #expect(error.code == .possiblyLost, "\(error)")
                lost.insert(index)
            }
        }
        #expect(!lost.isEmpty)
        #expect(lost.allSatisfy { $0 > 5 })
        #expect(accepted.count + lost.count + 1 == 2_000)
        // What was reported lost never reached the mock; what was accepted reached it once.
        let tokens = try acceptedTokens(fixture.gateway)
        #expect(fixture.gateway.acceptedCount == accepted.count)
        let same = Set(tokens.keys) == Set(accepted.map { legacyToken($0) })
        #expect(same, "the mock accepted other tokens than the client reported")
        try await fixture.stop()
    }

    @Test("each frame written at once (negative framing timeout), with command 1")
    func unbatchedEnhanced() async throws {
        let fixture = try await LegacyFixture.start { $0.script.reject(token: legacyToken(50), with: .invalidToken) }
        let outcomes = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.framingTimeout = .milliseconds(-1); $0.command = .enhanced }) { client in
            try await sendAll((0..<300).map { legacyNotification($0) }, with: client)
        }
        #expect(outcomes[50]?.result == .rejected(.invalidToken))
        #expect(outcomes.values.filter { $0.result == .accepted }.count == 299)
        #expect(fixture.gateway.acceptedCount == 299)
        #expect(fixture.gateway.accepted.allSatisfy { $0.command == .enhanced })
        try await fixture.stop()
    }

    @Test("send waits for the outcome: accepted after the settle interval, or the gateway's status as an error that invalidates the token")
    func singleSend() async throws {
        let fixture = try await LegacyFixture.start { $0.script.reject(token: legacyToken(2), with: .invalidToken) }
        try await withLegacyClient(configuration: fixture.clientConfiguration()) { client in
            try await client.send(legacyNotification(1))
            #expect(fixture.gateway.acceptedCount == 1)
            await #expect {
                try await client.send(legacyNotification(2))
            } throws: { error in
                let error = error as? LegacyError
                return error?.code == .rejected && error?.status == .invalidToken && error?.invalidatesToken == true
            }
            try await client.send(legacyNotification(3))
        }
        #expect(fixture.gateway.acceptedCount == 2)
        let expiry = try LegacyNotification(token: legacyToken(9), payload: legacyNotification(9).payload, expiration: .at(Date(timeIntervalSince1970: 2_000_000_000)), priority: .throttled)
        try await withLegacyClient(configuration: fixture.clientConfiguration()) { client in try await client.send(expiry) }
        let frame = try #require(fixture.gateway.accepted.last)
        #expect(frame.expiry == 2_000_000_000 && frame.priority == 5 && frame.payload == expiry.payload.bytes)
        try await fixture.stop()
    }

    @Test("a payload over the command's limit is refused before sending, in bulk too")
    func payloadTooLarge() async throws {
        let fixture = try await LegacyFixture.start()
        let large = try LegacyNotification(token: legacyToken(1), payload: Payload(aps: APS(alert: .text(String(repeating: "z", count: 400)))).encode())
        let outcomes = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.command = .enhanced }) { client in
            await #expect(throws: LegacyError.self) { try await client.send(large) }
            return try await sendAll([legacyNotification(0), large], with: client)
        }
        guard case .failed(let error) = outcomes[1]?.result else {
            Issue.record("the large one was not refused")
            return
        }
        #expect(error.code == .invalidNotification)
        #expect(outcomes[0]?.result == .accepted)
        #expect(fixture.gateway.acceptedCount == 1)
        try await fixture.stop()
    }

    @Test("without the client certificate the gateway requires, or with nothing listening, notifications fail with connectionFailed")
    func connectionFailures() async throws {
        let fixture = try await LegacyFixture.start()
        let stranger = try MockCertificateAuthority(name: "Unknown CA").issuePushCertificate(topic: "com.example.stranger")
        let refused = try await withLegacyClient(configuration: fixture.clientConfiguration { $0.identity = stranger; $0.maximumConnectAttempts = 2 }) { client in
            try await sendAll([legacyNotification(1), legacyNotification(2)], with: client)
        }
        // The gateway may reject the certificate during or right after the handshake; either way nothing is accepted.
        for outcome in refused.values {
            guard case .failed(let error) = outcome.result else {
                Issue.record("accepted without a valid certificate")
                continue
            }
            #expect(error.code == .connectionFailed, "\(error)")
        }
        #expect(fixture.gateway.acceptedCount == 0)
        let port = fixture.gateway.port
        try await fixture.stop()

        var closed = fixture.clientConfiguration { $0.maximumConnectAttempts = 2 }
        closed.gateway = LegacyEndpoint(host: "127.0.0.1", port: port)
        _ = try await withLegacyClient(configuration: closed) { client in
            await #expect {
                try await client.send(legacyNotification(1))
            } throws: { error in
                let error = error as? LegacyError
                return error?.code == .connectionFailed && error?.message.contains("127.0.0.1:\(port)") == true
            }
        }
    }

    @Test("sends after shutdown fail with shutdown; shutdown is idempotent")
    func afterShutdown() async throws {
        let fixture = try await LegacyFixture.start()
        let client = try LegacyClient(configuration: fixture.clientConfiguration())
        try await client.send(legacyNotification(1))
        await client.shutdown()
        await client.shutdown()
        await #expect {
            try await client.send(legacyNotification(2))
        } throws: { ($0 as? LegacyError)?.code == .shutdown }
        #expect(fixture.gateway.acceptedCount == 1)
        try await fixture.stop()
    }
}

/// The mock gateway's answers to invalid notifications, seen from a raw TLS connection.
@Suite("Mock gateway: strict parsing over TLS", .timeLimit(.minutes(6)))
struct MockGatewayTests {
    /// Writes `bytes` on a fresh TLS connection and returns everything the gateway sends until it closes.
    func exchange(_ bytes: [UInt8], with fixture: LegacyFixture) async throws -> [UInt8] {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(fixture.gateway.trustRoots)
        fixture.identity.apply(to: &tls)
        let context = try NIOSSLContext(configuration: tls)
        let collector = ResponseCollector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: fixture.gateway.port).get()
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        try await channel.closeFuture.get()
        return collector.received
    }

    @Test("each invalid notification is answered with its status and the connection is closed; what followed is discarded")
    func statuses() async throws {
        let fixture = try await LegacyFixture.start()
        let good = legacyNotification(1)
        var valid = ByteBuffer()
        try LegacyEncoder.write(good, identifier: 41, command: .frame, into: &valid)
        let token = good.token.bytes
        func enhanced(_ tokenBytes: [UInt8], _ payload: [UInt8]) -> [UInt8] {
            var b = ByteBuffer()
            b.writeInteger(UInt8(1)); b.writeInteger(UInt32(42)); b.writeInteger(UInt32(0))
            b.writeInteger(UInt16(tokenBytes.count)); b.writeBytes(tokenBytes); b.writeInteger(UInt16(payload.count)); b.writeBytes(payload)
            return Array(b.readableBytesView)
        }
        let cases: [([UInt8], [UInt8])] = [
            (enhanced([], good.payload.bytes), [8, 2, 0, 0, 0, 42]),
            (enhanced(token, []), [8, 4, 0, 0, 0, 42]),
            (enhanced(Array(token.prefix(20)), good.payload.bytes), [8, 5, 0, 0, 0, 42]),
            (enhanced(token, Array(repeating: 0x20, count: 300)), [8, 7, 0, 0, 0, 42]),
            ([0x7F, 1, 2, 3], [8, 128, 0, 0, 0, 0]),
        ]
        for (invalid, expected) in cases {
            let before = fixture.gateway.acceptedCount
            // A valid notification, the invalid one, then a valid one that must be discarded.
            let answer = try await exchange(Array(valid.readableBytesView) + invalid + Array(valid.readableBytesView), with: fixture)
            #expect(answer == expected)
            #expect(fixture.gateway.acceptedCount == before + 1)
        }
        #expect(fixture.gateway.rejectionsByStatus[.protocolError] == 1)
        try await fixture.stop()
    }

    @Test("status 8 for a scripted invalid token, with the notification's identifier")
    func invalidToken() async throws {
        let fixture = try await LegacyFixture.start { $0.script.reject(token: legacyToken(3), with: .invalidToken) }
        var bytes = ByteBuffer()
        try LegacyEncoder.write(legacyNotification(3), identifier: 0x0102_0304, command: .frame, into: &bytes)
        #expect(try await exchange(Array(bytes.readableBytesView), with: fixture) == [8, 8, 1, 2, 3, 4])
        #expect(fixture.gateway.rejections.first?.token == legacyToken(3).bytes)
        try await fixture.stop()
    }
}

/// Gathers the bytes a server sends.
private final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    // Touched only on the channel's event loop, then read after the channel closed.
    typealias InboundIn = ByteBuffer
    private(set) var received: [UInt8] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytesView
    }
}
