import ArgumentParser
import Crypto
import HeraldCore
import HeraldIdentity
import HeraldMock
import NIOCore
import NIOPosix
import NIOSSL
import UnixSignals

/// `herald mock`: runs the mock APNs server until interrupted.
struct MockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock",
        abstract: "Run a mock APNs server (HTTP/2 over TLS) for testing.",
        discussion: """
            With no certificate it makes a CA and a certificate for 127.0.0.1, ::1 and localhost, \
            and writes the CA to --write-ca for clients to trust. Without --auth-key-public any \
            well-formed ES256 provider token is accepted.
            """
    )

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int = 2197

    @Option(help: "Address to bind.")
    var bind: String = "127.0.0.1"

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Server certificate (PEM), with --tls-key.", valueName: "FILE"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("Server private key (PEM).", valueName: "FILE"))
    var tlsKey: String?

    @Option(name: .customLong("write-ca"), help: ArgumentHelp("Write the generated CA certificate (PEM) here.", valueName: "FILE"))
    var writeCA: String?

    @Option(name: .customLong("auth-key-public"), help: ArgumentHelp("A provider-token public key to verify with (repeatable).", valueName: "KID=FILE.pem"))
    var authKeys: [String] = []

    @Option(name: .customLong("team-id"), help: "The team the provider-token keys belong to.")
    var teamID: String?

    @Option(name: .customLong("client-ca"), help: ArgumentHelp("Require client certificates issued by this CA (certificate authentication).", valueName: "FILE.pem"))
    var clientCA: String?

    @Option(help: ArgumentHelp("Answer 410 Unregistered for this token (repeatable).", valueName: "TOKEN"))
    var unregistered: [String] = []

    @Option(help: ArgumentHelp("Answer this token with this reason (repeatable).", valueName: "TOKEN=REASON"))
    var fail: [String] = []

    @Option(name: .customLong("max-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS.")
    var maximumStreams: Int = 1000

    @Flag(help: "Answer like the development environment (with apns-unique-id).")
    var sandbox = false

    @Option(name: .customLong("record-limit"), help: "Accepted notifications kept for inspection.")
    var recordLimit: Int = 0

    func run() async throws {
        var configuration = MockAPNSServer.Configuration()
        configuration.host = bind
        configuration.port = port
        configuration.maximumConcurrentStreams = maximumStreams
        configuration.sandbox = sandbox
        configuration.recordLimit = recordLimit
        switch (tlsCertificate, tlsKey) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            if writeCA != nil { throw CommandFailure.usage("--write-ca writes a generated CA; it cannot be used with --tls-cert") }
            do {
                configuration.tlsIdentity = try CertificateIdentity(file: certificate, keyFile: key)
            } catch {
                throw CommandFailure.usage(error.message)
            }
        default:
            throw CommandFailure.usage("--tls-cert and --tls-key go together")
        }
        for entry in authKeys {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw CommandFailure.usage("--auth-key-public takes KID=FILE.pem, got '\(entry)'")
            }
            let keyID = String(entry[..<equals])
            let path = String(entry[entry.index(after: equals)...])
            let pem = String(decoding: try FileContents.readArgument(path, what: "public key file"), as: UTF8.self)
            do {
                let publicKey = try (try? P256.Signing.PublicKey(pemRepresentation: pem)) ?? P256.Signing.PrivateKey(pemRepresentation: pem).publicKey
                configuration.registerProviderKey(publicKey, keyID: keyID, teamID: teamID)
            } catch {
                throw CommandFailure.usage("--auth-key-public \(keyID): '\(path)' is not a P-256 public key (PEM)")
            }
        }
        if let clientCA {
            do {
                configuration.clientCertificateAuthorities = try NIOSSLCertificate.fromPEMFile(clientCA)
            } catch {
                throw CommandFailure.usage("--client-ca '\(clientCA)': \(error)")
            }
        }
        for token in unregistered {
            do {
                configuration.script.unregister(try DeviceToken(token).hex)
            } catch {
                throw CommandFailure.usage("--unregistered \(token): \(error.detail ?? "")")
            }
        }
        for entry in fail {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw CommandFailure.usage("--fail takes TOKEN=REASON, e.g. --fail abcd…=BadDeviceToken, got '\(entry)'")
            }
            let token: DeviceToken
            do {
                token = try DeviceToken(String(entry[..<equals]))
            } catch {
                throw CommandFailure.usage("--fail \(entry): \(error.detail ?? "")")
            }
            configuration.script.fail(token.hex, with: .reject(String(entry[entry.index(after: equals)...])))
        }

        let server = try MockAPNSServer(configuration: configuration)
        do {
            try await server.start()
        } catch {
            throw CommandFailure.usage("cannot listen on \(bind):\(port): \(error)")
        }
        if let writeCA, let pem = server.certificateAuthorityPEM {
            do {
                try FileContents.write(Array(pem.utf8), to: writeCA)
            } catch {
                throw CommandFailure.usage("--write-ca: \(error.description)")
            }
        }
        Terminal.line("mock APNs listening on \(server.url)")
        if let writeCA { Terminal.line("trust its CA with --ca-file \(writeCA)") }
        Terminal.flush()
        await waitForInterrupt()
        try await server.shutdown()
        Terminal.line("mock APNs stopped: \(server.acceptedCount) accepted, \(server.rejectionsByReason.values.reduce(0, +)) rejected")
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForInterrupt() async {
    for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
        return
    }
}
