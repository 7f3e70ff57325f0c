import Foundation
import HeraldCore
import HeraldIdentity
import HeraldLegacy
import HeraldAPNSMock
import Testing

@Suite("Feedback service, end to end over TLS", .timeLimit(.minutes(6)))
struct FeedbackTests {
    struct Service {
        let server: MockFeedbackServer
        let identity: CertificateIdentity

        func reader(_ configure: (inout LegacyFeedbackReader) -> Void = { _ in }) -> LegacyFeedbackReader {
            var reader = LegacyFeedbackReader(service: server.endpoint, identity: identity)
            reader.trustRoots = .only(server.trustRoots)
            configure(&reader)
            return reader
        }
    }

    func start(_ configure: (inout MockFeedbackServer.Configuration) -> Void) async throws -> Service {
        let clients = try MockCertificateAuthority(name: "Feedback client CA")
        var configuration = MockFeedbackServer.Configuration()
        configuration.clientCertificateAuthorities = [try clients.tlsCertificate]
        configure(&configuration)
        let server = try MockFeedbackServer(configuration: configuration)
        try await server.start()
        return Service(server: server, identity: try clients.issuePushCertificate(topic: "com.example.feedback"))
    }

    static let tuples = (1...300).map { FeedbackTuple(timestamp: Date(timeIntervalSince1970: TimeInterval(1_700_000_000 + $0)), token: legacyToken($0)) }

    @Test("reads every tuple until the service closes, in order; the list is cleared once read")
    func readsAll() async throws {
        let service = try await start { $0.tuples = Self.tuples }
        let read = try await service.reader().read()
        #expect(read == Self.tuples)
        #expect(try await service.reader().read().isEmpty, "APNs clears the list once it has been read")
        service.server.add([FeedbackTuple(timestamp: Date(timeIntervalSince1970: 1_800_000_000), token: legacyToken(7))])
        #expect(try await service.reader().read().map(\.token) == [legacyToken(7)])
        #expect(service.server.readCount == 3)
        try await service.server.shutdown()
    }

    @Test("a service that never closes: after the timeout the tuples read so far are returned")
    func timeout() async throws {
        let service = try await start { configuration in
            configuration.tuples = Array(Self.tuples.prefix(5))
            configuration.holdsConnectionOpen = true
        }
        let clock = ContinuousClock()
        let started = clock.now
        let read = try await service.reader { $0.timeout = .milliseconds(500) }.read()
        #expect(read == Array(Self.tuples.prefix(5)))
        #expect(clock.now - started >= .milliseconds(500))
        try await service.server.shutdown()
    }

    @Test("no client certificate the service accepts, or nothing listening: connectionFailed, saying where")
    func failures() async throws {
        let service = try await start { $0.tuples = Self.tuples }
        let stranger = try MockCertificateAuthority(name: "Stranger").issuePushCertificate(topic: "com.example.stranger")
        await #expect {
            _ = try await service.reader { $0.identity = stranger }.read()
        } throws: { ($0 as? LegacyError)?.code == .connectionFailed }
        #expect(service.server.pending.count == Self.tuples.count, "nothing was handed to a stranger")
        let port = service.server.port
        try await service.server.shutdown()
        await #expect {
            _ = try await LegacyFeedbackReader(service: LegacyEndpoint(host: "127.0.0.1", port: port), identity: service.identity).read()
        } throws: { error in
            let error = error as? LegacyError
            return error?.code == .connectionFailed && error?.message.contains("127.0.0.1:\(port)") == true
        }
    }
}
