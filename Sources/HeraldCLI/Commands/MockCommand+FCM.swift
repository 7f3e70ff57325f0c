import Foundation
import HeraldCore
import HeraldFCMMock
import HeraldAPNSMock

extension MockCommand {
    /// Starts the mock FCM for `--fcm-port`, its certificate issued by `authority` (the other
    /// listeners' generated CA) when there is one, and writes its service-account key file.
    /// Returns the mock and the files written to the temporary directory (removed at exit).
    func startFCM(authority: MockCertificateAuthority?) async throws -> (server: MockFCMServer, temporaryFiles: [String])? {
        guard let fcmPort else {
            if fcmWriteServiceAccount != nil { throw CommandFailure.usage("--fcm-write-service-account writes the FCM mock's key file; add --fcm-port") }
            return nil
        }
        var configuration = MockFCMServer.Configuration()
        configuration.host = bind
        configuration.port = fcmPort
        configuration.certificateIssuer = authority
        configuration.maximumRecords = recordLimit
        let server: MockFCMServer
        do {
            server = try await MockFCMServer.start(configuration: configuration)
        } catch {
            throw CommandFailure.usage("--fcm-port cannot listen on \(bind):\(fcmPort): \(ListenFailure.describe(error))")
        }
        let temporary = FileManager.default.temporaryDirectory.path
        let accountFile = fcmWriteServiceAccount ?? temporary + "/herald-fcm-mock-service-account-\(server.port).json"
        // The other listeners' CA file when they share it; otherwise one of its own beside the key file.
        let caFile = authority != nil ? writeCA ?? temporary + "/herald-fcm-mock-ca-\(server.port).pem" : accountFile + ".ca.pem"
        do {
            try FileContents.write(server.serviceAccountJSON, to: accountFile, private: true)
            if caFile != writeCA { try FileContents.write(Array(server.certificateAuthorityPEM.utf8), to: caFile) }
        } catch {
            try? await server.shutdown()
            throw CommandFailure.usage("--fcm-write-service-account: \(error.description)")
        }
        Terminal.line("mock FCM listening on \(server.origin) (project \(server.configuration.projectID)); token endpoint \(server.serviceAccount.tokenURI)")
        Terminal.line("its service account: \(accountFile); trust its CA with \(caFile)")
        // The files the user did not name.
        var chosen = fcmWriteServiceAccount == nil ? [accountFile] : []
        if caFile != writeCA, authority != nil || fcmWriteServiceAccount == nil { chosen.append(caFile) }
        return (server, chosen)
    }

    /// Stops the mock FCM and prints what it did; removes the files it wrote to the temporary directory.
    func stopFCM(_ fcm: (server: MockFCMServer, temporaryFiles: [String])?) async throws {
        guard let fcm else { return }
        try await fcm.server.shutdown()
        for file in fcm.temporaryFiles { try? FileManager.default.removeItem(atPath: file) }
        let refused = fcm.server.rejectionsByReason.values.reduce(0, +)
        Terminal.line("mock FCM stopped: \(fcm.server.receivedCount) accepted, \(refused) refused, \(fcm.server.tokenRequestCount) token requests")
    }
}
