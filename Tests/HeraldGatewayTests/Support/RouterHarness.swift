import Foundation
import HeraldAPNS
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import Logging
import HummingbirdTesting
import Testing

/// The API in HummingbirdTesting's router mode (no socket) on a fresh store (SQLite unless told), with two
/// apps and a key for the first only: for the API's contract, status by status.
struct RouterHarness: Sendable {
    let client: any TestClientProtocol
    let key: String
    let otherKey: String
    let document: OpenAPIContract

    static func run(
        backend: Backend = .sqlite, logger: Logger? = nil, configure: (inout GatewayConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (RouterHarness) async throws -> Void
    ) async throws {
        let scratch = try ScratchDirectory()
        let key = APIKey.generate(name: "shop-only", apps: [appID])
        let otherKey = APIKey.generate(name: "other-only", apps: ["other"])
        let credentials = APNSCredentials.providerToken(ProviderKey.generate(keyID: "KEY1234567", teamID: "TEAM123456"))
        let apps = [
            GatewayConfiguration.App(id: appID, topic: bundleID, environment: .sandbox, credentials: credentials),
            GatewayConfiguration.App(id: "other", topic: "com.example.other", environment: .sandbox, credentials: credentials),
        ]
        var configuration = GatewayConfiguration(database: try StoreURL(await backend.storeURL(scratch: scratch, name: "api.db")), apps: apps, apiKeys: [key.entry, otherKey.entry])
        configuration.limits.maximumBodySize = 64 << 10
        configuration.limits.maximumImportLineSize = 4096
        configure(&configuration)
        let gateway = try HeraldGateway(configuration: configuration, roles: .api)
        // PostgreSQL's connection pool lives while the store's service runs (SQLite needs none,
        // and its shared file stays open for the other tests).
        let store = backend == .postgres ? Task { try await gateway.store.run() } : nil
        defer { store?.cancel() }
        try await gateway.store.migrate()
        let application = logger.map { Application(router: gateway.api.router(), logger: $0) } ?? Application(router: gateway.api.router())
        let document = try OpenAPIContract(bytes: OpenAPIDocument.bytes)
        try await application.test(.router) { client in
            try await body(RouterHarness(client: client, key: key.key, otherKey: otherKey.key, document: document))
        }
        withExtendedLifetime(scratch) {}
    }

    /// Sends a request (with the shop key unless `key` says otherwise) and checks the answer
    /// against the OpenAPI document: its status is documented for the route, and its JSON body
    /// has exactly the documented shape.
    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, body: String? = nil, key: String?? = .none, contentType: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (status: Int, json: JSONValue?, headers: HTTPFields) {
        var headers = HTTPFields()
        switch key {
        case .none: headers[.authorization] = "Bearer \(self.key)"
        case .some(.some(let given)): headers[.authorization] = "Bearer \(given)"
        case .some(.none): break
        }
        if let contentType { headers[.contentType] = contentType }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        let bytes = Array(response.body.readableBytesView)
        let json = bytes.isEmpty ? nil : try? JSONValue(parsing: bytes)
        let status = Int(response.status.code)
        #expect(status < 500, "never a 500 for what a client sends: \(method) \(path) → \(status) \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        if response.headers[.contentType]?.hasPrefix("application/json") == true {
            #expect(json != nil, "a JSON answer parses", sourceLocation: sourceLocation)
        }
        if let problem = document.check(method: method.rawValue, path: path, status: status, body: json) {
            Issue.record("\(method) \(path) → \(status): \(problem)", sourceLocation: sourceLocation)
        }
        return (status, json, response.headers)
    }
}

