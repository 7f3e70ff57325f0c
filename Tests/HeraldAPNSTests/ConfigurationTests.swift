import HeraldAPNS
import HeraldCore
import Testing

@Suite("Client configuration")
struct ClientConfigurationTests {
    static let valid = APNSClient.Configuration(environment: .sandbox, credentials: .providerToken(ProviderKey.generate(keyID: "KEY1234567", teamID: "HERALDTEAM")))

    @Test("the defaults are valid")
    func defaults() throws {
        try Self.valid.validate()
    }

    @Test("a field out of range is refused when the client is made, naming the field, the value and the rule")
    func outOfRange() throws {
        let cases: [((inout APNSClient.Configuration) -> Void, String)] = [
        ({ $0.pool.maximumConnections = 0 }, "configuration.pool.maximumConnections is 0; it must be at least 1"),
        ({ $0.pool.maximumInFlight = -1 }, "configuration.pool.maximumInFlight is -1; it must be at least 1"),
        ({ $0.pool.maximumStreamsPerConnection = 0 }, "configuration.pool.maximumStreamsPerConnection is 0; it must be at least 1, or nil"),
        ({ $0.pool.maximumStreamsPerConnectionLifetime = 1 << 31 }, "configuration.pool.maximumStreamsPerConnectionLifetime is 2147483648; it must be from 1 to 1073741824"),
        ({ $0.pool.maximumConnectionAge = .zero }, "configuration.pool.maximumConnectionAge is 0.0 seconds; it must be positive, or nil"),
        ({ $0.pool.reconnectMaximumBackoff = .milliseconds(1) }, "configuration.pool.reconnectMaximumBackoff is 0.001 seconds; it must be at least pool.reconnectInitialBackoff (0.1 seconds)"),
        ({ $0.pool.maximumConnectAttempts = 0 }, "configuration.pool.maximumConnectAttempts is 0; it must be at least 1"),
        ({ $0.timeouts.request = .zero }, "configuration.timeouts.request is 0.0 seconds; it must be positive"),
        ({ $0.timeouts.connect = .seconds(-1) }, "configuration.timeouts.connect is -1.0 seconds; it must be positive"),
        ({ $0.liveness.pingTimeout = .zero }, "configuration.liveness.pingTimeout is 0.0 seconds; it must be positive"),
        ({ $0.proxy = .init(host: "proxy", port: 0) }, "configuration.proxy.port is 0; it must be from 1 to 65535"),
        ]
        for (change, message) in cases {
            var configuration = Self.valid
            change(&configuration)
            let error = #expect(throws: APNSClientError.self) { try APNSClient(configuration: configuration) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "")")
        }
    }
}
