import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import Testing

let appID = "shop"
let bundleID = "com.example.shop"

/// A distinct 32-byte token for each number.
func token(_ number: Int) -> String {
    String(format: "%064x", number)
}

/// A running gateway on a real socket, on a fresh store, sending to a real mock APNs over TLS,
/// with an API key for its one app.
struct GatewayHarness {
    let mock: MockAPNSServer
    let gateway: HeraldGateway
    let client: TestClient
    let key: String
    let port: Int

    /// A gateway configuration for `mock` on `database`, with one key for the app.
    static func configuration(database: String, mock: MockAPNSServer, providerKey: ProviderKey, apiKey: APIKey) throws -> GatewayConfiguration {
        var app = GatewayConfiguration.App(id: appID, topic: bundleID, environment: mock.environment, credentials: .providerToken(providerKey))
        app.trustRoots = .only(mock.trustRoots)
        app.connections = 2
        var configuration = GatewayConfiguration(database: try StoreURL(database), apps: [app], apiKeys: [apiKey])
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.queue.initialRetryDelay = .seconds(1)
        configuration.queue.maximumRetryDelay = .seconds(2)
        configuration.workers.count = 3
        configuration.workers.batchSize = 200
        return configuration
    }

    /// Runs `body` with a gateway and a mock; both are stopped after, whatever happens.
    static func run(
        _ backend: Backend, mock configureMock: (inout MockAPNSServer.Configuration) -> Void = { _ in },
        gateway configureGateway: (inout GatewayConfiguration) throws -> Void = { _ in }, _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        try await prepare(backend, mock: configureMock, gateway: configureGateway) { configuration, mock, key in
            try await run(configuration, mock: mock, key: key, body)
        }
    }

    /// Runs `body` with a fresh store's gateway configuration, a running mock and the API key,
    /// for a test that starts and stops gateways itself (with ``run(_:mock:key:_:)``).
    static func prepare(
        _ backend: Backend, mock configureMock: (inout MockAPNSServer.Configuration) -> Void = { _ in },
        gateway configureGateway: (inout GatewayConfiguration) throws -> Void = { _ in },
        _ body: (GatewayConfiguration, MockAPNSServer, String) async throws -> Void
    ) async throws {
        let scratch = try ScratchDirectory()
        let providerKey = ProviderKey.generate(keyID: "KEY\(UInt32.random(in: 1_000_000...9_999_999))", teamID: "HERALDTEAM")
        var mockConfiguration = MockAPNSServer.Configuration()
        mockConfiguration.registerProviderKey(providerKey.publicKey, keyID: providerKey.keyID, teamID: providerKey.teamID)
        mockConfiguration.recordLimit = 200_000
        configureMock(&mockConfiguration)
        let mock = try MockAPNSServer(configuration: mockConfiguration)
        try await mock.start()
        defer { Task { try? await mock.shutdown() } }

        let (key, entry) = APIKey.generate(name: "tests", apps: [appID])
        var configuration = try configuration(database: try await backend.storeURL(scratch: scratch), mock: mock, providerKey: providerKey, apiKey: entry)
        try configureGateway(&configuration)
        try await body(configuration, mock, key)
        _ = scratch
        try await mock.shutdown()
    }

    /// Runs `body` with a gateway for `configuration`, the mock and key of ``prepare(_:mock:gateway:_:)``.
    static func run(
        _ configuration: GatewayConfiguration, mock: MockAPNSServer, key: String, logger: Logger? = nil, _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        try await withGateway(configuration, logger: logger) { gateway, port in
            try await withClient(port: port) { client in
                try await body(GatewayHarness(mock: mock, gateway: gateway, client: client, key: key, port: port))
            }
        }
    }

    /// This harness's mock and key, against another gateway listening on `port`.
    func against(port: Int, _ body: (GatewayHarness) async throws -> Void) async throws {
        try await withClient(port: port) { client in
            try await body(GatewayHarness(mock: mock, gateway: gateway, client: client, key: key, port: port))
        }
    }

    // MARK: Requests

    /// A request with the key; the answer's status and JSON body (`nil` when empty).
    @discardableResult
    func call(_ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil, key: String? = nil, contentType: String? = nil) async throws -> (
        status: Int, json: JSONValue?, headers: HTTPFields
    ) {
        try await raw(method, path, body.map { Array($0.jsonString.utf8) }, key: key ?? self.key, contentType: contentType)
    }

    func raw(_ method: HTTPRequest.Method, _ path: String, _ body: [UInt8]?, key: String?, contentType: String? = nil) async throws -> (
        status: Int, json: JSONValue?, headers: HTTPFields
    ) {
        var headers = HTTPFields()
        if let key { headers[.authorization] = "Bearer \(key)" }
        if let contentType { headers[.contentType] = contentType }
        let response = try await client.execute(TestClient.Request(path, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }))
        let bytes = response.body.map { Array($0.readableBytesView) } ?? []
        let json = bytes.isEmpty ? nil : try? JSONValue(parsing: bytes)
        return (Int(response.status.code), json, response.headers)
    }

    /// Registers `numbers` as devices (one request each).
    func register(_ numbers: some Sequence<Int>, user: (Int) -> String? = { _ in nil }, tags: (Int) -> [String] = { _ in [] }) async throws {
        for number in numbers {
            var fields: [String: JSONValue] = ["tags": .array(tags(number).map(JSONValue.string))]
            if let user = user(number) { fields["user"] = .string(user) }
            let answer = try await call(.put, "/v1/apps/\(appID)/devices/\(token(number))", .object(fields))
            #expect(answer.status == 201 || answer.status == 200, "\(answer.json?.jsonString ?? "")")
        }
    }

    /// Queues a notification; returns its ID.
    func send(_ to: JSONValue, alert: String = "Hello", extra: [String: JSONValue] = [:]) async throws -> String {
        var body: [String: JSONValue] = ["to": to, "payload": ["aps": ["alert": .string(alert)]]]
        for (name, value) in extra { body[name] = value }
        let answer = try await call(.post, "/v1/apps/\(appID)/notifications", .object(body))
        #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
        return try #require(answer.json?["id"]?.stringValue)
    }

    /// Waits (at most `timeout`) until the notification is done; returns it as the API shows it.
    @discardableResult
    func waitUntilDone(_ id: String, timeout: Duration = .seconds(60), key: String? = nil) async throws -> JSONValue {
        var last: JSONValue?
        let finished = try await eventually(within: timeout, every: .milliseconds(50)) {
            last = try await call(.get, "/v1/notifications/\(id)", key: key).json
            return last?["status"]?.stringValue == "done" || last?["status"]?.stringValue == "cancelled"
        }
        if !finished { Issue.record("notification \(id) not done within \(timeout): \(last?.jsonString ?? "nil")") }
        return last ?? .null
    }

    /// Tokens the mock accepted notifications for, with how many each (alert text `alert` only, when given).
    func received(alert: String? = nil) -> [String: Int] {
        var counts: [String: Int] = [:]
        for record in mock.accepted {
            if let alert, (try? JSONValue(parsing: record.payload))?["aps"]?["alert"]?.stringValue != alert { continue }
            counts[record.token, default: 0] += 1
        }
        return counts
    }
}

/// An HTTP/1.1 client connected to 127.0.0.1:`port` for the length of `body`.
func withClient(port: Int, _ body: (TestClient) async throws -> Void) async throws {
    let client = TestClient(host: "127.0.0.1", port: port)
    client.connect()
    do {
        try await body(client)
    } catch {
        try? await client.shutdown()
        throw error
    }
    try await client.shutdown()
}

/// Runs a gateway for `configuration` for the length of `body` and stops it gracefully after.
func withGateway(
    _ configuration: GatewayConfiguration, roles: HeraldGateway.Roles = .all, logger given: Logger? = nil, _ body: (HeraldGateway, Int) async throws -> Void
) async throws {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    // HERALD_TEST_LOG=debug shows the gateway's log on stderr.
    var logger = Logger(label: "gateway", factory: { _ in SwiftLogNoOpLogHandler() })
    if let level = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) {
        logger = Logger(label: "gateway", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = level
    }
    if let given { logger = given }
    let gateway = try HeraldGateway(configuration: configuration, roles: roles, logger: logger) { address in continuation.yield(address.port) }
    let group = ServiceGroup(services: [gateway], gracefulShutdownSignals: [], logger: Logger(label: "tests", factory: { _ in SwiftLogNoOpLogHandler() }))
    let running = Task {
        defer { continuation.finish() }
        try await group.run()
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else {
        // It stopped before it listened: its error says why.
        try await running.value
        throw CancellationError()
    }
    do {
        try await body(gateway, port)
    } catch {
        await group.triggerGracefulShutdown()
        _ = await running.result
        throw error
    }
    await group.triggerGracefulShutdown()
    try await running.value
}

extension JSONValue {
    /// The number of a count field, for short expectations.
    func count(_ name: String) -> Int? { self[name]?.intValue }
}
