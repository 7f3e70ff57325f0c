import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import HeraldTestSupport
import Testing

/// The examples of README.md, kept compiling and correct. Change both together.
@Suite("README examples")
struct ReadmeExampleTests {
    /// README: the configuration lines, loading a real .p8 file.
    func readmeConfiguration(keyFile: String) throws -> APNSClient.Configuration {
        // README: begin configuration
        let key = try ProviderKey(contentsOfFile: keyFile, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")  // keyFile: the path of your AuthKey_ABC123DEFG.p8
        let configuration = APNSClient.Configuration(environment: .sandbox, credentials: .providerToken(key))
        // README: end configuration
        return configuration
    }

    /// README: the sending part, verbatim.
    func readmeSending(
        configuration: APNSClient.Configuration, deviceTokenHex: String, tokens: [DeviceToken],
        forget: (DeviceToken, _ unregisteredSince: Date?) -> Void
    ) async throws {
        // README: begin sending
        let body = try Payload(aps: APS(alert: .titled("Order shipped", body: "Arrives Tuesday"), badge: 1)).encode()

        try await withAPNSClient(configuration: configuration) { client in
            // One notification: returns the apns-id, or throws APNSError (with APNs's reason) or APNSClientError.
            let response = try await client.send(
                PushNotification(token: try DeviceToken(deviceTokenHex), headers: PushHeaders(topic: "com.example.app"), payload: body)
            )
            print(response.apnsID)

            // Many: exactly one outcome per notification, sending as fast as outcomes are taken.
            let notifications = tokens.map { PushNotification(token: $0, headers: PushHeaders(topic: "com.example.app"), payload: body) }
            for try await outcome in client.send(contentsOf: notifications) {
                if let error = outcome.rejection, error.reason.invalidatesToken {
                    // 410 Unregistered comes with the time APNs saw the token go (error.timestamp).
                    forget(outcome.notification.token, error.timestamp)
                }
            }
        }
        // README: end sending
    }

    @Test("the configuration example loads a .p8 key")
    func configuration() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("AuthKey_ABC123DEFG.p8", ProviderKey.generate().pemRepresentation)
        let configuration = try readmeConfiguration(keyFile: path)
        #expect(configuration.environment == .sandbox)
        guard case .providerToken(let key) = configuration.credentials else {
            Issue.record("expected token credentials")
            return
        }
        #expect(key.keyID == "ABC123DEFG" && key.teamID == "DEF123GHIJ")
    }

    @Test("the sending and mock examples run against the mock")
    func sendingAgainstTheMock() async throws {
        let goneTokenHex = token(2)
        // README: begin mock
        let key = ProviderKey.generate()
        var mockConfiguration = MockAPNSServer.Configuration()
        mockConfiguration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
        mockConfiguration.script.unregister(goneTokenHex)
        try await withMockAPNSServer(configuration: mockConfiguration) { mock in
            var configuration = APNSClient.Configuration(environment: mock.environment, credentials: .providerToken(key))
            configuration.trustRoots = .only(mock.trustRoots)
            // … run your code, then check mock.accepted, mock.acceptedCount, mock.rejectionsByReason
            // README: end mock
            var forgotten: [DeviceToken] = []
            try await readmeSending(
                configuration: configuration, deviceTokenHex: token(1), tokens: [try DeviceToken(token(3)), try DeviceToken(goneTokenHex)],
                forget: { token, since in
                    #expect(since != nil)
                    forgotten.append(token)
                }
            )
            #expect(mock.acceptedCount == 2)
            #expect(mock.rejectionsByReason == ["Unregistered": 1])
            #expect(forgotten == [try DeviceToken(goneTokenHex)])
        }
    }
}

@Suite("README stays in step with its tests")
struct ReadmeInStepTests {
    /// The lines between `// README: begin` and `// README: end` markers, trimmed.
    static func markedLines(in file: String) throws -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("// README: begin") {
                current = []
            } else if trimmed.hasPrefix("// README: end") {
                if let block = current { blocks.append(block) }
                current = nil
            } else if current != nil, !trimmed.isEmpty {
                current!.append(trimmed)
            }
        }
        return blocks
    }

    @Test("every example block in the tests appears in README.md, line for line")
    func inStep() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let root = tests.deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let files = [
            tests.appendingPathComponent("HeraldAPNSTests/ReadmeExampleTests.swift").path,
            tests.appendingPathComponent("HeraldCoreTests/ReadmeExampleTests.swift").path,
            tests.appendingPathComponent("HeraldLegacyTests/ReadmeExampleTests.swift").path,
        ]
        var blocks = 0
        for file in files {
            for block in try Self.markedLines(in: file) {
                blocks += 1
                let found = readme.indices.contains { start in
                    start + block.count <= readme.count && Array(readme[start..<start + block.count]) == block
                }
                #expect(found, "README.md lacks this block from \(file): \(block.joined(separator: "\n"))")
            }
        }
        #expect(blocks == 6)
    }
}
