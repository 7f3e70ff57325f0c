import HeraldAPNS
import HeraldAPNSMock
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HummingbirdTesting
import Testing

/// A gateway configured with many apps: an app holds no client or connection until it sends,
/// closes them when idle, and a reload that changes one app rebuilds that app only.
@Suite("Many apps", .timeLimit(.minutes(3)))
struct ManyAppsTests {
    static let apps = 300

    /// The harness's app with `count - 1` others beside it, each with its own revision, all
    /// sending to the mock.
    static func manyApps(_ configuration: inout GatewayConfiguration, idle: Duration) {
        var shop = configuration.apps[0]
        shop.revision = "shop-1"
        var apps = [shop]
        for index in 1..<Self.apps {
            var other = shop
            other.id = "app\(index)"
            other.topic = "com.example.app\(index)"
            other.revision = "app\(index)-1"
            apps.append(other)
        }
        configuration.apps = apps
        configuration.workers.idleClientTimeout = idle
    }

    @Test("300 apps: no connection until one sends, then that app's only; a reload changing another app keeps it, one changing it rebuilds it")
    func lazyClientsAndReload() async throws {
        try await GatewayHarness.run(.sqlite, gateway: { Self.manyApps(&$0, idle: .seconds(3600)) }) { harness in
            let clients = harness.gateway.live.snapshot.clients
            #expect(try await harness.call(.get, "/readyz").status == 200)
            #expect(harness.mock.connectionCount == 0, "no app has sent: no connection")
            #expect(clients.count == 0)

            try await harness.register([1])
            try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1))]], alert: "first"))
            #expect(harness.received(alert: "first") == [token(1): 1])
            #expect(clients.count == 1, "shop's client only")
            let opened = harness.mock.connectionCount
            #expect(opened >= 1)

            // Another app changes: shop keeps its client and its connection.
            var changed = harness.gateway.configuration
            changed.apps[7].revision = "app7-2"
            try await harness.gateway.reload(changed)
            try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1))]], alert: "second"))
            #expect(harness.received(alert: "second") == [token(1): 1])
            #expect(harness.mock.connectionCount == opened, "no new connection for shop")
            #expect(clients.count == 1)

            // Shop changes: its client closes and the next send opens a connection of its own.
            changed.apps[0].revision = "shop-2"
            try await harness.gateway.reload(changed)
            let closed = await eventually(within: .seconds(10), every: .milliseconds(20)) { clients.count == 0 }
            #expect(closed, "shop's old client closed once unused")
            try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1))]], alert: "third"))
            #expect(harness.received(alert: "third") == [token(1): 1])
            #expect(harness.mock.connectionCount > opened, "a new client, a new connection")
        }
    }

    @Test("/metrics gives the first maximumAppLabels apps to send a label each, and every app after them _other")
    func boundedMetrics() async throws {
        try await GatewayHarness.run(
            .sqlite,
            gateway: {
                Self.manyApps(&$0, idle: .seconds(3600))
                $0.metrics.maximumAppLabels = 2
                $0.apiKeys[0].apps = Set($0.apps.map(\.id))
            }
        ) { harness in
            for app in ["shop", "app1", "app2", "app3"] {
                let registered = try await harness.call(.put, "/v1/apps/\(app)/devices/\(token(1))", ["user": "u1"])
                #expect(registered.status == 201, "\(registered.json?.jsonString ?? "")")
                let queued = try await harness.call(.post, "/v1/apps/\(app)/notifications", ["to": ["tokens": [.string(token(1))]], "payload": ["aps": ["alert": "hi"]]])
                try await harness.waitUntilDone(try #require(queued.json?["id"]?.stringValue))
            }
            let text = String(decoding: try await metricsBody(harness), as: UTF8.self)
            var labels: Set<String> = []
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard let start = line.firstRange(of: "app=\"") else { continue }
                let rest = line[start.upperBound...]
                labels.insert(String(rest[..<rest.firstIndex(of: "\"")!]))
            }
            #expect(labels == ["shop", "app1", "_other"], "\(labels)")
            #expect(text.contains(#"herald_deliveries_total{app="_other""#), "app2's and app3's deliveries counted together")
        }
    }

    /// The body of `GET /metrics`.
    func metricsBody(_ harness: GatewayHarness) async throws -> [UInt8] {
        let response = try await harness.client.execute(TestClient.Request("/metrics", method: .get))
        #expect(response.status == .ok)
        return response.body.map { Array($0.readableBytesView) } ?? []
    }

    @Test("a client unused for idleClientSeconds closes with its connections; the app's next send opens one again")
    func idleClientsClose() async throws {
        try await GatewayHarness.run(.sqlite, gateway: { Self.manyApps(&$0, idle: .seconds(1)) }) { harness in
            let clients = harness.gateway.live.snapshot.clients
            try await harness.register([1])
            try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1))]], alert: "before"))
            #expect(clients.count == 1)
            let closed = await eventually(within: .seconds(20), every: .milliseconds(50)) {
                clients.count == 0 && harness.mock.openConnectionCount == 0
            }
            #expect(closed, "the idle client closed its connections: \(clients.count) clients, \(harness.mock.openConnectionCount) connections")
            let opened = harness.mock.connectionCount
            try await harness.waitUntilDone(try await harness.send(["tokens": [.string(token(1))]], alert: "after"))
            #expect(harness.received(alert: "after") == [token(1): 1])
            #expect(harness.mock.connectionCount > opened)
        }
    }
}
