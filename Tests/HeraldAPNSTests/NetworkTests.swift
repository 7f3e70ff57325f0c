import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@Suite("Connections: proxies, TLS, refused and dead connections", .timeLimit(.minutes(6)))
struct NetworkTests {
    @Test("through an HTTP CONNECT proxy, with its authorization (field-lessons #8)")
    func connectProxy() async throws {
        let fixture = try await MockFixture.start()
        let relay = TestRelay(.connectProxy(requiredAuthorization: "Basic aGVyYWxkOnB3"))
        let port = try await relay.start()
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.proxy = .init(host: "127.0.0.1", port: port, authorization: "Basic aGVyYWxkOnB3")
        }) { client in
            try await sendAll(batch(200), with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil })
        #expect(relay.connections >= 1)
        #expect(fixture.server.acceptedCount == 200)
        try await relay.stop()
        try await fixture.stop()
    }

    @Test("a proxy that refuses CONNECT: the notification fails with the proxy's answer")
    func proxyRefuses() async throws {
        let fixture = try await MockFixture.start()
        let relay = TestRelay(.connectProxy(requiredAuthorization: "Basic c2VjcmV0"))
        let port = try await relay.start()
        let error = await #expect(throws: APNSClientError.self) {
            try await withAPNSClient(configuration: fixture.clientConfiguration {
                $0.proxy = .init(host: "127.0.0.1", port: port)
                $0.pool.maximumConnectAttempts = 2
                $0.pool.reconnectInitialBackoff = .milliseconds(10)
            }) { client in
                try await client.send(notification(to: token(1)))
            }
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("407") == true, "\(String(describing: error))")
        try await relay.stop()
        try await fixture.stop()
    }

    @Test("a server certificate that is not trusted fails at once with tlsFailed; verification is on by default")
    func untrustedServer() async throws {
        let fixture = try await MockFixture.start()
        let error = await #expect(throws: APNSClientError.self) {
            try await withAPNSClient(configuration: fixture.clientConfiguration { $0.trustRoots = .system }) { client in
                try await client.send(notification(to: token(1)))
            }
        }
        #expect(error?.code == .tlsFailed, "\(String(describing: error))")
        #expect(fixture.server.requestCount == 0)
        try await fixture.stop()
    }

    @Test("a TLS server that does not speak HTTP/2 (no ALPN h2) is refused as not APNs")
    func noHTTP2() async throws {
        let server = try await HTTP1OnlyTLSServer.start()
        var configuration = APNSClient.Configuration(
            environment: .custom(host: "127.0.0.1", port: server.port), credentials: .providerToken(.generate())
        )
        configuration.trustRoots = .only([try server.authority.tlsCertificate])
        configuration.pool.maximumConnectAttempts = 1
        let error = await #expect(throws: APNSClientError.self) {
            try await withAPNSClient(configuration: configuration) { client in
                try await client.send(notification(to: token(1)))
            }
        }
        #expect(error?.code == .http2NotOffered, "\(String(describing: error))")
        try await server.channel.close()
    }

    @Test("nothing listening: after the connect attempts, queued notifications fail with connectionFailed")
    func connectionRefused() async throws {
        let placeholder = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = placeholder.localAddress!.port!
        try await placeholder.close()
        var configuration = APNSClient.Configuration(environment: .custom(host: "127.0.0.1", port: port), credentials: .providerToken(.generate()))
        configuration.pool.maximumConnectAttempts = 3
        configuration.pool.reconnectInitialBackoff = .milliseconds(10)
        let notifications = try batch(20)
        let outcomes = try await withAPNSClient(configuration: configuration) { client in
            try await sendAll(notifications, with: client)
        }
        for outcome in outcomes {
            #expect(outcome.failure?.code == .connectionFailed, "\(outcome.result)")
            #expect(outcome.failure?.message.contains("127.0.0.1:\(port)") == true)
        }
    }

    @Test("a dead connection (no PING answer) is closed and its notifications re-sent on a new one (field-lessons #3)")
    func deadConnection() async throws {
        let fixture = try await MockFixture.start()
        let relay = TestRelay(.transparent(target: try SocketAddress(ipAddress: "127.0.0.1", port: fixture.server.port), freezeFirstConnectionAfterServerBytes: 20_000))
        let port = try await relay.start()
        let notifications = try batch(1000)
        let outcomes = try await withAPNSClient(configuration: fixture.clientConfiguration {
            $0.environment = .custom(host: "127.0.0.1", port: port)
            $0.pool.maximumConnections = 1
            $0.pool.maximumInFlight = 100
            $0.timeouts.request = .seconds(30)  // the PING, not the request deadline, must find the dead connection
            $0.liveness.responseOverdueAfter = .milliseconds(200)
            // Long enough that, however loaded the machine, notifications are written to the
            // frozen connection before its PING times out: otherwise, if the freeze swallowed
            // only a PING acknowledgement, the connection dies with nothing on it to re-send.
            $0.liveness.pingTimeout = .seconds(2)
        }) { client in
            try await sendAll(notifications, with: client)
        }
        #expect(outcomes.allSatisfy { $0.response != nil }, "\(outcomes.first { $0.response == nil }?.result as Any)")
        let attempts = Dictionary(grouping: outcomes, by: \.attempts).mapValues(\.count)
        #expect(
            outcomes.contains { $0.attempts == 2 },
            "notifications stuck on the dead connection were sent again (attempts: \(attempts), relay connections: \(relay.connections), mock connections: \(fixture.server.connectionCount))"
        )
        #expect(relay.connections >= 2)
        fixture.expectDelivered(outcomes)
        try await relay.stop()
        try await fixture.stop()
    }
}
