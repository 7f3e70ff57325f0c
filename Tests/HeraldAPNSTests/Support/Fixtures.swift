import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Logging
import NIOCore
import NIOPosix
import Testing

/// A mock APNs server with a registered provider key, and clients configured to trust it.
struct MockFixture {
    let server: MockAPNSServer
    let key: ProviderKey

    static let topic = "com.example.herald"

    /// Starts a mock; `configure` adjusts its configuration first.
    static func start(_ configure: (inout MockAPNSServer.Configuration) -> Void = { _ in }) async throws -> MockFixture {
        let key = ProviderKey.generate(keyID: "KEY\(UInt32.random(in: 1_000_000...9_999_999))", teamID: "HERALDTEAM")
        var configuration = MockAPNSServer.Configuration()
        configuration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
        configuration.recordLimit = 200_000
        configure(&configuration)
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        return MockFixture(server: server, key: key)
    }

    /// A client configuration for this mock with token authentication.
    func clientConfiguration(_ configure: (inout APNSClient.Configuration) -> Void = { _ in }) -> APNSClient.Configuration {
        var configuration = APNSClient.Configuration(environment: server.environment, credentials: .providerToken(key))
        configuration.trustRoots = .only(server.trustRoots)
        // Generous: with every suite running at once on two cores, a notification can wait seconds
        // for its turn. Tests about deadlines set their own.
        configuration.timeouts.request = .seconds(60)
        configuration.retry = RetryPolicy(
            maximumAttempts: 5, initialBackoff: .milliseconds(20), maximumBackoff: .milliseconds(200), jitter: 0.2,
            providerTokenUpdateDelay: .milliseconds(50)
        )
        configure(&configuration)
        return configuration
    }

    func stop() async throws {
        try await server.shutdown()
    }
}

/// A notification to `token` with a small alert.
func notification(to token: String, topic: String = MockFixture.topic, apnsID: UUID? = nil, body: String = "Hello") throws -> PushNotification {
    try PushNotification(
        token: DeviceToken(token),
        headers: PushHeaders(pushType: .alert, topic: topic, apnsID: apnsID),
        payload: Payload(aps: APS(alert: .text(body)))
    )
}

/// A distinct 32-byte token for each number.
func token(_ number: Int) -> String {
    String(format: "%064x", number)
}

/// `count` notifications to distinct tokens, each with its own apns-id.
func batch(_ count: Int, topic: String = MockFixture.topic, tokenOffset: Int = 0) throws -> [PushNotification] {
    try (0..<count).map { try notification(to: token(tokenOffset + $0), topic: topic, apnsID: UUID()) }
}

/// Sends `notifications` in bulk and checks the contract: exactly one outcome per notification.
func sendAll(_ notifications: [PushNotification], with client: APNSClient) async throws -> [APNSOutcome] {
    var outcomes: [APNSOutcome] = []
    for try await outcome in client.send(contentsOf: notifications) {
        outcomes.append(outcome)
    }
    #expect(outcomes.count == notifications.count, "one outcome per notification")
    #expect(Set(outcomes.map(\.index)) == Set(0..<notifications.count), "every notification has its outcome, none twice")
    for outcome in outcomes {
        #expect(outcome.notification == notifications[outcome.index])
    }
    return outcomes
}

extension MockFixture {
    /// Checks that every notification the client reports accepted was accepted by the mock.
    func expectDelivered(_ outcomes: [APNSOutcome], sourceLocation: SourceLocation = #_sourceLocation) {
        let delivered = Set(server.accepted.map(\.apnsID))
        let missing = outcomes.compactMap(\.response).filter { !delivered.contains($0.apnsID) }
        #expect(missing.isEmpty, "accepted by the client but not recorded by the mock: \(missing.prefix(3))", sourceLocation: sourceLocation)
        #expect(server.acceptedCount >= outcomes.filter { $0.response != nil }.count, sourceLocation: sourceLocation)
    }
}
