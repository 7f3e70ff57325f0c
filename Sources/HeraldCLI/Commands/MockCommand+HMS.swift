import Foundation
import HeraldCore
import HeraldHMSMock
import HeraldAPNSMock

extension MockCommand {
    /// Starts the mock Push Kit for `--hms-port`, its certificate issued by `authority` (the other
    /// listeners' generated CA) when there is one, and writes what a gateway's `hms` entry needs:
    /// the client secret (for `clientSecretEnv`) and the service account's key file (for
    /// `serviceAccountFile`). Returns the mock and the files written to the temporary directory
    /// (removed at exit).
    func startHMS(authority: MockCertificateAuthority?) async throws -> (server: MockHMSServer, temporaryFiles: [String])? {
        guard let hmsPort else {
            if hmsWriteSecret != nil || hmsWriteServiceAccount != nil {
                throw CommandFailure.usage("--hms-write-secret and --hms-write-service-account write the Push Kit mock's credentials; add --hms-port")
            }
            return nil
        }
        var configuration = MockHMSServer.Configuration()
        configuration.host = bind
        configuration.port = hmsPort
        configuration.certificateIssuer = authority
        configuration.maximumRecords = recordLimit
        let server: MockHMSServer
        do {
            server = try await MockHMSServer.start(configuration: configuration)
        } catch {
            throw CommandFailure.usage("--hms-port cannot listen on \(bind):\(hmsPort): \(ListenFailure.describe(error))")
        }
        let temporary = FileManager.default.temporaryDirectory.path
        let secretFile = hmsWriteSecret ?? temporary + "/herald-hms-mock-secret-\(server.port)"
        let accountFile = hmsWriteServiceAccount ?? temporary + "/herald-hms-mock-service-account-\(server.port).json"
        let caFile = authority != nil ? writeCA ?? temporary + "/herald-hms-mock-ca-\(server.port).pem" : accountFile + ".ca.pem"
        do {
            try FileContents.write(Array(server.clientSecret.utf8), to: secretFile, private: true)
            try FileContents.write(server.serviceAccountJSON, to: accountFile, private: true)
            if caFile != writeCA { try FileContents.write(Array(server.certificateAuthorityPEM.utf8), to: caFile) }
        } catch {
            try? await server.shutdown()
            throw CommandFailure.usage("--hms-write-secret / --hms-write-service-account: \(error.description)")
        }
        Terminal.line("mock Push Kit listening on \(server.origin) (client \(server.appCredentials.clientID), project \(server.serviceAccount.projectID)); token endpoint \(server.appCredentials.tokenURI)")
        Terminal.line("its client secret: \(secretFile); its service account: \(accountFile); trust its CA with \(caFile)")
        var chosen: [String] = []
        if hmsWriteSecret == nil { chosen.append(secretFile) }
        if hmsWriteServiceAccount == nil { chosen.append(accountFile) }
        if caFile != writeCA, authority != nil || hmsWriteServiceAccount == nil { chosen.append(caFile) }
        return (server, chosen)
    }

    /// Stops the mock Push Kit and prints what it did; removes the files it wrote to the temporary directory.
    func stopHMS(_ hms: (server: MockHMSServer, temporaryFiles: [String])?) async throws {
        guard let hms else { return }
        try await hms.server.shutdown()
        for file in hms.temporaryFiles { try? FileManager.default.removeItem(atPath: file) }
        let refused = hms.server.rejectionsByReason.values.reduce(0, +)
        Terminal.line("mock Push Kit stopped: \(hms.server.receivedCount) accepted, \(refused) refused, \(hms.server.tokenRequestCount) token requests")
    }
}
