import Foundation
import HeraldCore
import HeraldIdentity
@testable import HeraldLegacy
import HeraldAPNSMock
import NIOCore

/// A distinct 32-byte token for each number.
func legacyToken(_ number: Int) -> DeviceToken {
    try! DeviceToken(String(format: "%064x", number))
}

/// A small notification to `legacyToken(number)`.
func legacyNotification(_ number: Int, body: String = "Hello") -> LegacyNotification {
    try! LegacyNotification(
        token: legacyToken(number),
        payload: Payload(aps: APS(alert: .text(body)), custom: ["n": .int(number)]).encode()
    )
}

/// The bytes of `buffer`.
extension ByteBuffer {
    var bytes: [UInt8] { Array(readableBytesView) }
}


/// A gateway and feedback service on loopback that require a client certificate from their own
/// CA, and the identity and trust a client needs.
struct LegacyFixture {
    let gateway: MockLegacyGateway
    let identity: CertificateIdentity
    let clientAuthority: MockCertificateAuthority

    static func start(_ configure: (inout MockLegacyGateway.Configuration) -> Void = { _ in }) async throws -> LegacyFixture {
        let clientAuthority = try MockCertificateAuthority(name: "Legacy test client CA")
        var configuration = MockLegacyGateway.Configuration()
        configuration.clientCertificateAuthorities = [try clientAuthority.tlsCertificate]
        configuration.recordLimit = 50_000
        configure(&configuration)
        let gateway = try MockLegacyGateway(configuration: configuration)
        try await gateway.start()
        return LegacyFixture(gateway: gateway, identity: try clientAuthority.issuePushCertificate(topic: "com.example.legacy"), clientAuthority: clientAuthority)
    }

    /// A client configuration for this gateway, with short back-off times for tests. The settle
    /// interval stays well above how long a debug-built mock, sharing two cores with other tests,
    /// can take to reach a notification: settling earlier would count discarded ones as accepted.
    func clientConfiguration(_ configure: (inout LegacyClient.Configuration) -> Void = { _ in }) -> LegacyClient.Configuration {
        var configuration = LegacyClient.Configuration(gateway: gateway.endpoint, identity: identity)
        configuration.trustRoots = .only(gateway.trustRoots)
        configuration.settleInterval = .seconds(3)
        configuration.reconnectInitialBackoff = .milliseconds(10)
        configuration.reconnectMaximumBackoff = .milliseconds(100)
        configure(&configuration)
        return configuration
    }

    func stop() async throws {
        try await gateway.shutdown()
    }
}
