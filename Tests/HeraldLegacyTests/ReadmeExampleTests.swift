import Foundation
import HeraldCore
import HeraldIdentity
import HeraldLegacy
import HeraldAPNSMock
import HeraldTestSupport
import Testing

/// The legacy example of README.md, kept compiling and correct. Change both together.
@Suite("README legacy example")
struct LegacyReadmeExampleTests {
    /// README: the configuration lines, loading a real PEM file.
    func readmeConfiguration(certificateFile: String) throws -> LegacyClient.Configuration {
        // README: begin legacy configuration
        let identity = try CertificateIdentity(file: certificateFile)  // a PEM with its key, or a .p12 with its password
        let configuration = LegacyClient.Configuration(gateway: .sandboxGateway, identity: identity)
        // README: end legacy configuration
        return configuration
    }

    /// README: sending and reading the feedback service, verbatim.
    func readmeSending(
        configuration: LegacyClient.Configuration, feedbackReader: LegacyFeedbackReader, tokens: [DeviceToken],
        forget: (DeviceToken) -> Void, forgetUnlessRegisteredSince: (DeviceToken, Date) -> Void
    ) async throws {
        // README: begin legacy sending
        let body = try Payload(aps: APS(alert: .text("Hello"), badge: 1)).encode()
        try await withLegacyClient(configuration: configuration) { client in
            // 32-byte tokens only; exactly one outcome per notification, failures and re-sends included.
            let notifications = try tokens.map { try LegacyNotification(token: $0, payload: body) }
            for try await outcome in client.send(contentsOf: notifications) {
                if outcome.invalidatesToken { forget(outcome.token) }  // status 8
            }
        }

        // The feedback service: tokens whose app is gone, and since when. Reading clears the list.
        for tuple in try await feedbackReader.read() {
            forgetUnlessRegisteredSince(tuple.token, tuple.timestamp)
        }
        // README: end legacy sending
    }

    @Test("the configuration example loads a PEM certificate with its key")
    func configuration() throws {
        let identity = try MockCertificateAuthority().issuePushCertificate(topic: "com.example.readme")
        let pem = try identity.certificate.serializeAsPEM().pemString + "\n" + identity.privateKey.serializeAsPEM().pemString + "\n"
        let scratch = try ScratchDirectory()
        let configuration = try readmeConfiguration(certificateFile: try scratch.write("push.pem", pem))
        #expect(configuration.gateway == .sandboxGateway)
        #expect(configuration.identity.subjectUID == "com.example.readme")
    }

    @Test("the sending and feedback example runs against the mocks")
    func sendingAgainstTheMocks() async throws {
        let gone = legacyToken(2)
        let fixture = try await LegacyFixture.start { $0.script.reject(token: gone, with: .invalidToken) }
        var feedbackConfiguration = MockFeedbackServer.Configuration()
        feedbackConfiguration.clientCertificateAuthorities = [try fixture.clientAuthority.tlsCertificate]
        feedbackConfiguration.tuples = [FeedbackTuple(timestamp: Date(timeIntervalSince1970: 1_700_000_000), token: legacyToken(9))]
        let feedback = try MockFeedbackServer(configuration: feedbackConfiguration)
        try await feedback.start()
        var reader = LegacyFeedbackReader(service: feedback.endpoint, identity: fixture.identity)
        reader.trustRoots = .only(feedback.trustRoots)

        var forgotten: [DeviceToken] = []
        var reported: [(DeviceToken, Date)] = []
        try await readmeSending(
            configuration: fixture.clientConfiguration(), feedbackReader: reader,
            tokens: [legacyToken(1), gone, legacyToken(3)],
            forget: { forgotten.append($0) }, forgetUnlessRegisteredSince: { reported.append(($0, $1)) }
        )
        #expect(forgotten == [gone])
        #expect(fixture.gateway.acceptedCount == 2)
        #expect(reported.map(\.0) == [legacyToken(9)])
        #expect(reported.map(\.1) == [Date(timeIntervalSince1970: 1_700_000_000)])
        try await feedback.shutdown()
        try await fixture.stop()
    }
}
