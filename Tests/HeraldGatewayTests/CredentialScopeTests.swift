import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// APNs keys scoped to one environment (Apple, February 2025): an app names a credential per
/// environment, each environment's devices go out on connections of that credential alone, and a
/// device of an environment without one fails saying so. Two mocks, one per environment, each
/// refusing the other environment's key as APNs does.
@Suite("APNs credentials by environment", .timeLimit(.minutes(4)))
struct CredentialScopeTests {
    @Test("a sandbox-only and a production-only key: each environment's devices accepted with its own; a swapped pair refused; no sandbox key: APNsEnvironmentNotConfigured")
    func byEnvironment() async throws {
        // One CA for both mocks, so one trust root serves the app's two hosts.
        let authority = try MockCertificateAuthority()
        let production = ProviderKey.generate(keyID: "PRODKEY001", teamID: "HERALDTEAM")
        let sandbox = ProviderKey.generate(keyID: "SANDKEY001", teamID: "HERALDTEAM")
        func register(_ configuration: inout MockAPNSServer.Configuration) {
            configuration.registerProviderKey(production.publicKey, keyID: production.keyID, teamID: production.teamID, scope: .init(sandbox: false))
            configuration.registerProviderKey(sandbox.publicKey, keyID: sandbox.keyID, teamID: sandbox.teamID, scope: .init(sandbox: true))
        }
        var sandboxConfiguration = MockAPNSServer.Configuration()
        sandboxConfiguration.sandbox = true
        sandboxConfiguration.tlsIdentity = try authority.issueServerIdentity()
        register(&sandboxConfiguration)
        try await withMockAPNSServer(configuration: sandboxConfiguration) { sandboxMock in
            let identity = try authority.issueServerIdentity()
            let root = try authority.tlsCertificate
            func configure(_ credentials: [TokenEnvironment: ProviderKey]) -> (inout GatewayConfiguration) throws -> Void {
                { configuration in
                    configuration.apps[0].environments[.sandbox] = sandboxMock.environment
                    configuration.apps[0].trustRoots = .only([root])
                    configuration.apps[0].credentialsByEnvironment = credentials.mapValues { .providerToken($0) }
                    configuration.apps[0].credentialsServeEveryEnvironment = false
                }
            }
            // Each environment with its own key.
            try await GatewayHarness.run(
                .sqlite, mock: { $0.tlsIdentity = identity; register(&$0) }, gateway: configure([.production: production, .sandbox: sandbox])
            ) { harness in
                let devices = "/v1/apps/\(appID)/devices/"
                try await harness.call(.put, devices + token(1), [:])
                try await harness.call(.put, devices + token(2), ["environment": "sandbox"])
                let done = try await harness.waitUntilDone(try await harness.send(["all": true], alert: "scoped"))
                #expect(done.count("accepted") == 2, "\(done.jsonString)")
                #expect(harness.mock.accepted.map(\.token) == [token(1)], "production's device at the production host")
                #expect(sandboxMock.accepted.map(\.token) == [token(2)], "the sandbox device at the sandbox host")
            }
            // Swapped: APNs refuses each key in the other environment.
            try await GatewayHarness.run(
                .sqlite, mock: { $0.tlsIdentity = identity; register(&$0) }, gateway: configure([.production: sandbox, .sandbox: production])
            ) { harness in
                try await harness.call(.put, "/v1/apps/\(appID)/devices/" + token(3), [:])
                let id = try await harness.send(["all": true], alert: "swapped")
                let refused = await eventually { harness.mock.rejected.contains { $0.token == token(3) && $0.reason == "BadEnvironmentKeyIdInToken" } }
                #expect(refused, "the sandbox key at production: \(harness.mock.rejected.map(\.reason))")
                #expect(try await harness.call(.delete, "/v1/notifications/\(id)").status == 200)
            }
            // Production's key only: a sandbox device fails, saying why; the production one goes.
            try await GatewayHarness.run(
                .sqlite, mock: { $0.tlsIdentity = identity; register(&$0) }, gateway: configure([.production: production])
            ) { harness in
                let devices = "/v1/apps/\(appID)/devices/"
                try await harness.call(.put, devices + token(4), [:])
                try await harness.call(.put, devices + token(5), ["environment": "sandbox"])
                let done = try await harness.waitUntilDone(try await harness.send(["all": true], alert: "production only"))
                #expect(done.count("accepted") == 1 && done.count("failed") == 1, "\(done.jsonString)")
                let failed = try await harness.call(.get, "/v1/notifications/\(done["id"]!.stringValue!)/deliveries?outcome=failed")
                let delivery = failed.json?["deliveries"]?.arrayItems.first
                #expect(delivery?["token"]?.stringValue == token(5) && delivery?["reason"]?.stringValue == "APNsEnvironmentNotConfigured", "\(failed.json?.jsonString ?? "")")
            }
        }
    }

    @Test("the file: credentialsByEnvironment with the app's own key, or keys of its own only; bad entries named")
    func configurationFile() throws {
        let scratch = try ScratchDirectory()
        let key = ProviderKey.generate(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let other = ProviderKey.generate(keyID: "XYZ123DEFG", teamID: "DEF123GHIJ")
        try scratch.write("AuthKey_ABC123DEFG.p8", key.pemRepresentation)
        try scratch.write("AuthKey_XYZ123DEFG.p8", other.pemRepresentation)
        func load(_ apns: String) throws -> GatewayConfiguration.App {
            let file = try scratch.write(
                "herald.json",
                #"{"database": "sqlite:h.db", "apps": [{"id": "shop", "apns": {"topic": "com.example.shop", "environment": "production", \#(apns)}}], "apiKeys": []}"#)
            return try #require(try GatewayConfiguration.load(file: file).apps.first)
        }
        let ownKey = #""authKey": {"file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ"}"#
        let otherKey = #"{"authKey": {"file": "AuthKey_XYZ123DEFG.p8", "keyID": "XYZ123DEFG", "teamID": "DEF123GHIJ"}}"#
        // The app's key serves production; the sandbox has a key of its own.
        let both = try load(ownKey + #", "credentialsByEnvironment": {"sandbox": \#(otherKey)}"#)
        #expect(both.credentialsServeEveryEnvironment)
        #expect(both.credentials(for: .production).map(GatewayConfiguration.App.describe) == "provider key ABC123DEFG of team DEF123GHIJ")
        #expect(both.credentials(for: .sandbox).map(GatewayConfiguration.App.describe) == "provider key XYZ123DEFG of team DEF123GHIJ")
        // Keys per environment only: the sandbox has none.
        let productionOnly = try load(#""credentialsByEnvironment": {"production": \#(otherKey)}"#)
        #expect(!productionOnly.credentialsServeEveryEnvironment && productionOnly.apnsTopic == "com.example.shop")
        #expect(productionOnly.credentials(for: .sandbox) == nil && productionOnly.credentials(for: .production) != nil)
        // Bad entries: what is wrong, by its path.
        for (apns, expected) in [
            (#""credentialsByEnvironment": {"staging": \#(otherKey)}"#, "staging"),
            (#""credentialsByEnvironment": {}"#, "names no environment"),
            (#""credentialsByEnvironment": {"sandbox": "certificate"}"#, "names certificate, which this app does not have"),
        ] {
            #expect(throws: (any Error).self) { _ = try load(apns) }
            do {
                _ = try load(apns)
            } catch {
                #expect("\(error)".contains(expected) && "\(error)".contains("credentialsByEnvironment"), "\(error)")
            }
        }
    }
}
