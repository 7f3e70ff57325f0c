import Foundation
import HeraldCore
import HeraldAPNSMock
import NIOSSL
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// The gateway on a real socket against hostile clients and a growing database: slow clients are
/// cut off and cannot take the connections of others, retention runs by itself, and `/metrics`
/// costs the database nothing per scrape.
@Suite("Gateway bounds", .timeLimit(.minutes(6)))
struct GatewayBoundsTests {
    @Test("slowloris: half-sent heads are closed after requestHeadTimeout, one address holds at most its share, others are served meanwhile")
    func slowClients() async throws {
        try await GatewayHarness.run(.sqlite, gateway: { configuration in
            // Long enough for a loaded CI machine to send a whole head on a fresh connection.
            configuration.limits.requestHeadTimeout = .seconds(3)
            configuration.limits.maximumConnectionsPerAddress = 8
            configuration.limits.maximumConnections = 64
        }) { harness in
            // 20 connections from one address, each with half a request head.
            var attackers: [RawConnection] = []
            for _ in 0..<20 {
                let connection = try await RawConnection.connect(port: harness.port, from: "127.0.0.2")
                try? await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                attackers.append(connection)
            }
            // Past 8, the address's connections are closed at once.
            var refused = 0
            for connection in attackers.suffix(12) where await connection.closedByServer(within: .seconds(5)) { refused += 1 }
            #expect(refused == 12)
            // Another address is served while the first 8 hold their connections.
            let other = try await RawConnection.connect(port: harness.port, from: "127.0.0.3")
            try await other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = await eventually(within: .seconds(5), every: .milliseconds(20)) { other.received.contains("\r\n\r\n") }
            #expect(other.received.hasPrefix("HTTP/1.1 200"))
            // The 8 are cut off once their head is overdue.
            for connection in attackers.prefix(8) {
                #expect(await connection.closedByServer(within: .seconds(15)), "a half-sent head is closed after the deadline")
                #expect(connection.received.isEmpty, "nothing was answered to half a head")
            }
            // An idle keep-alive connection gets the same deadline for its next head.
            #expect(await other.closedByServer(within: .seconds(15)))
            for connection in attackers { await connection.close() }
            // And the address may connect again once its connections are gone.
            let again = try await RawConnection.connect(port: harness.port, from: "127.0.0.2")
            try await again.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = await eventually(within: .seconds(5), every: .milliseconds(20)) { again.received.contains("\r\n\r\n") }
            #expect(again.received.hasPrefix("HTTP/1.1 200"))
            await again.close()
            await other.close()
        }
    }

    @Test("a body that trickles slower than minimumBodyRate is cut off")
    func slowBody() async throws {
        try await GatewayHarness.run(.sqlite, gateway: { $0.limits.minimumBodyRate = 100_000 }) { harness in
            let connection = try await RawConnection.connect(port: harness.port)
            try await connection.send("PUT /v1/apps/\(appID)/devices/\(token(1)) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(harness.key)\r\nContent-Length: 1000000\r\n\r\n{")
            let closed = await connection.trickleUntilClosed()
            #expect(closed, "a body below minimumBodyRate is cut off")
            await connection.close()
            // Nothing was registered from half a body.
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(1))").status == 404)
        }
    }

    @Test("retention runs by itself: a finished notification and its outcomes are purged after queue.retention, and counted", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        try await GatewayHarness.run(backend, gateway: { configuration in
            configuration.queue.retention = .seconds(1)
            configuration.housekeeping.purgeInterval = .milliseconds(300)
        }) { harness in
            try await harness.register(0..<3)
            let id = try await harness.send(["tokens": [.string(token(0)), .string(token(1)), .string(token(2))]])
            try await harness.waitUntilDone(id)
            let purged = try await eventually(within: .seconds(20), every: .milliseconds(100)) {
                try await harness.call(.get, "/v1/notifications/\(id)").status == 404
            }
            #expect(purged, "the notification is gone after its retention")
            // The counter follows the purge's commit, which the 404 may see first.
            var line: Substring?
            _ = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                line = try await harness.metricsText().split(separator: "\n").first { $0.hasPrefix("herald_purged_rows_total ") }
                return (line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0) >= 4
            }
            #expect((line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0) >= 4, "\(line ?? "no herald_purged_rows_total")")
        }
    }

    @Test("a scrape of /metrics runs no query: the queue's gauges are what housekeeping last read", arguments: Backend.allCases)
    func metricsWithoutQueries(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            // Router mode runs no workers and no housekeeping: a queued device stays pending.
            #expect(try await api.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", body: "").status == 201)
            let body = #"{"to": {"tokens": ["\#(token(1))"]}, "payload": {"aps": {"alert": "x"}}}"#
            #expect(try await api.call(.post, "/v1/apps/\(appID)/notifications", body: body).status == 202)
            for _ in 0..<5 {
                let response = try await api.client.execute(uri: "/metrics", method: .get)
                let text = String(buffer: response.body)
                #expect(text.contains("herald_queue_pending_deliveries 0"), "a scrape does not query the database")
            }
        }
    }

    @Test("housekeeping reads the queue's depth into the gauges", arguments: Backend.allCases)
    func housekeepingStatistics(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: backend.storeURL(scratch: scratch))) { store in
            try await store.register(try DeviceRegistration(token: token(1)), app: appID)
            _ = try await store.enqueue(NotificationRequest(app: appID, audience: .tokens([token(1)]), payload: Array(#"{"aps":{}}"#.utf8)))
            let metrics = GatewayMetrics(registry: .init())
            let backlog = AppBacklog()
            let housekeeping = Housekeeping(
                store: store, settings: HousekeepingSettings(), retention: .seconds(60), metrics: metrics, backlog: backlog, logger: .init(label: "test")
            )
            await housekeeping.refreshStatistics()
            let text = String(decoding: metrics.exposition(), as: UTF8.self)
            #expect(text.contains("herald_queue_pending_deliveries 1"), "\(text)")
            #expect(text.contains("herald_queue_active_notifications 1"))
            #expect(backlog.pending(appID) == 1 && backlog.pending("other") == 0)
        }
    }
}

extension GatewayHarness {
    /// `/metrics` as text.
    func metricsText() async throws -> String {
        let response = try await client.execute(TestClient.Request("/metrics", method: .get))
        return response.body.map { String(buffer: $0) } ?? ""
    }
}

/// The API listener terminating TLS itself, with a certificate read again on reload.
@Suite("Gateway TLS", .timeLimit(.minutes(6)))
struct GatewayTLSTests {
    @Test("the API serves HTTPS with the configured certificate, and a reload switches to a renewed one without a restart")
    func reload() async throws {
        let scratch = try ScratchDirectory()
        let first = try MockCertificateAuthority(name: "First CA")
        let second = try MockCertificateAuthority(name: "Second CA")
        func install(_ authority: MockCertificateAuthority) throws {
            let identity = try authority.issueServerIdentity()
            _ = try scratch.write("api.pem", try identity.certificate.serializeAsPEM().pemString)
            _ = try scratch.write("api-key.pem", try identity.privateKey.serializeAsPEM().pemString)
        }
        try install(first)
        var configuration = GatewayConfiguration(
            database: try StoreURL("sqlite:" + scratch.file("tls.db")),
            apps: [.init(id: appID, topic: bundleID, environment: .sandbox, credentials: .providerToken(ProviderKey.generate()))], apiKeys: []
        )
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.tls = try APITLSIdentity(files: .init(certificateFile: scratch.file("api.pem"), keyFile: scratch.file("api-key.pem")))
        try await withGateway(configuration, roles: .api) { gateway, port in
            #expect(try await Self.healthz(port: port, trusting: first) == 200)
            await #expect(throws: (any Error).self) { try await Self.healthz(port: port, trusting: second) }

            try install(second)
            try gateway.reloadTLS()
            #expect(try await Self.healthz(port: port, trusting: second) == 200)
            await #expect(throws: (any Error).self) { try await Self.healthz(port: port, trusting: first) }

            // A broken file is refused and the renewed certificate stays in use.
            _ = try scratch.write("api.pem", "not a certificate")
            #expect(throws: APITLSIdentity.LoadError.self) { try gateway.reloadTLS() }
            #expect(try await Self.healthz(port: port, trusting: second) == 200)
        }
    }

    static func healthz(port: Int, trusting authority: MockCertificateAuthority) async throws -> UInt {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try authority.tlsCertificate])
        let client = TestClient(host: "localhost", port: port, configuration: .init(tlsConfiguration: tls, timeout: .seconds(5)))
        client.connect()
        defer { Task { try? await client.shutdown() } }
        let response = try await client.execute(TestClient.Request("/healthz", method: .get))
        return UInt(response.status.code)
    }
}
