import ArgumentParser
import Crypto
import HeraldCore
import Foundation
import HeraldIdentity
import HeraldLegacy
import HeraldAPNSMock
import HeraldWebPushMock
import NIOCore
import NIOPosix
import NIOSSL
import UnixSignals

/// `herald mock`: runs the mock APNs server until interrupted.
struct MockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock",
        abstract: "Run mock push services (APNs, Web Push, FCM, APNs's legacy gateway) for testing.",
        discussion: """
            It opens the services whose ports are given, each on its own flag: --port (APNs over \
            HTTP/2), --webpush-port, --fcm-port, --hms-port (Huawei Push Kit), --legacy-port and \
            --feedback-port; with none of them, APNs on port 2197. With no certificate it makes a CA and a certificate for 127.0.0.1, ::1 and localhost, \
            and writes the CA to --write-ca for clients to trust. Without --auth-key-public any \
            well-formed ES256 provider token is accepted. --legacy-port and --feedback-port also \
            serve the legacy binary gateway and feedback service, with the same certificate; \
            --unregistered answers status 8 there and --legacy-fail any status. --webpush-port also \
            serves a mock Web Push service (RFC 8030, VAPID, aes128gcm) that is also the browser: \
            POST /subscribe there gives a subscription to push to. Its certificate comes from the \
            same generated CA.
            """
    )

    @Option(name: [.customLong("port"), .customLong("apns-port")], help: "Serve APNs (HTTP/2) on this port (0 picks a free one); the default, on 2197, when no other service's port is given.")
    var port: Int?

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

    @Option(
        name: .customLong("auth-key-scope"),
        help: ArgumentHelp(
            "Scope a --auth-key-public key as Apple may since 2025: to one environment and/or some topics; refused elsewhere as APNs refuses (repeatable).",
            valueName: "KID=sandbox|production|TOPIC[,…]"))
    var authKeyScopes: [String] = []

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

    @Option(name: .customLong("legacy-port"), help: "Also serve the legacy binary gateway on this port (0 picks a free one).")
    var legacyPort: Int?

    @Option(name: .customLong("feedback-port"), help: "Also serve the legacy feedback service on this port (0 picks a free one).")
    var feedbackPort: Int?

    @Option(name: .customLong("legacy-fail"), help: ArgumentHelp("Answer this token on the legacy gateway with this status (repeatable).", valueName: "TOKEN=STATUS"))
    var legacyFail: [String] = []

    @Option(name: .customLong("write-client-cert"), help: ArgumentHelp("Write a push certificate with its key (PEM), issued by the generated CA, for --cert; the legacy gateway and feedback service then require it.", valueName: "FILE"))
    var writeClientCertificate: String?

    @Option(name: .customLong("client-topic"), help: "The topic of the --write-client-cert certificate.")
    var clientTopic = "com.example.app"

    @Option(help: ArgumentHelp("Report this token on the feedback service, optionally with its UNIX time (repeatable).", valueName: "TOKEN[@TIME]"))
    var feedback: [String] = []

    @Option(name: .customLong("webpush-port"), help: "Also serve a mock Web Push service on this port (0 picks a free one); POST /subscribe there gives a subscription.")
    var webPushPort: Int?

    @Option(
        name: .customLong("webpush-write-ca"),
        help: ArgumentHelp(
            "Write the Web Push mock's CA certificate (PEM) here (default: the --write-ca file when the CA is generated, otherwise a temporary file).",
            valueName: "FILE"))
    var webPushWriteCA: String?

    @Flag(name: .customLong("webpush-no-decrypt"), help: "The Web Push mock checks and records messages without decrypting them (an ECDH each): for benchmarks.")
    var webPushNoDecrypt = false

    @Option(name: .customLong("fcm-port"), help: "Also serve a mock FCM (HTTP v1 messages:send and its OAuth token endpoint) on this port (0 picks a free one).")
    var fcmPort: Int?

    @Option(
        name: .customLong("fcm-write-service-account"),
        help: ArgumentHelp("Write the FCM mock's service-account key file here (its token_uri points at the mock; default: a temporary file).", valueName: "FILE"))
    var fcmWriteServiceAccount: String?

    @Option(name: .customLong("hms-port"), help: "Also serve a mock Huawei Push Kit (its two send APIs and its OAuth token endpoint) on this port (0 picks a free one).")
    var hmsPort: Int?

    @Option(
        name: .customLong("hms-write-secret"),
        help: ArgumentHelp("Write the Push Kit mock's client secret here, for an app's clientSecretEnv (default: a temporary file).", valueName: "FILE"))
    var hmsWriteSecret: String?

    @Option(
        name: .customLong("hms-write-service-account"),
        help: ArgumentHelp("Write the Push Kit mock's service-account key file here, for HarmonyOS NEXT (default: a temporary file).", valueName: "FILE"))
    var hmsWriteServiceAccount: String?

    func run() async throws {
        // SIGINT and SIGTERM are trapped before any mock starts: one that comes as soon as a
        // "listening" line is printed stops the mocks cleanly (exit 0), not the process by the
        // signal's default action.
        let interrupts = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        if webPushPort == nil, webPushWriteCA != nil {
            throw CommandFailure.usage("--webpush-write-ca writes the Web Push mock's CA; add --webpush-port")
        }
        // Only the services asked for: a Web Push or FCM mock beside an APNs mock already running
        // must not collide with it on 2197.
        let apnsPort = port ?? (legacyPort == nil && feedbackPort == nil && webPushPort == nil && fcmPort == nil && hmsPort == nil ? 2197 : nil)
        if apnsPort == nil {
            let apnsOnly = [("--fail", !fail.isEmpty), ("--auth-key-public", !authKeys.isEmpty), ("--sandbox", sandbox), ("--client-ca", clientCA != nil)]
            if let (option, _) = apnsOnly.first(where: \.1) {
                throw CommandFailure.usage("\(option) is for the APNs mock, which this command does not open; add --port")
            }
        }
        var configuration = MockAPNSServer.Configuration()
        configuration.host = bind
        configuration.port = apnsPort ?? 0
        configuration.maximumConcurrentStreams = maximumStreams
        configuration.sandbox = sandbox
        configuration.recordLimit = recordLimit
        // One certificate for every listener, so one --ca-file trusts them all.
        var authority: MockCertificateAuthority?
        switch (tlsCertificate, tlsKey) {
        case (nil, nil):
            let generated = try MockCertificateAuthority()
            configuration.tlsIdentity = try generated.issueServerIdentity()
            authority = generated
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
        for entry in authKeyScopes {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw CommandFailure.usage("--auth-key-scope takes KID=sandbox, KID=production or KID=TOPIC,…, got '\(entry)'")
            }
            let keyID = String(entry[..<equals])
            guard configuration.providerKeys[keyID] != nil else {
                throw CommandFailure.usage("--auth-key-scope \(keyID): no --auth-key-public \(keyID)=FILE.pem to scope")
            }
            var scope = configuration.providerKeyScopes[keyID] ?? MockAPNSServer.ProviderKeyScope()
            for item in entry[entry.index(after: equals)...].split(separator: ",").map(String.init) {
                switch item {
                case "sandbox": scope.sandbox = true
                case "production": scope.sandbox = false
                default: scope.topics = (scope.topics ?? []).union([item])
                }
            }
            configuration.providerKeyScopes[keyID] = scope
        }
        if let clientCA {
            do {
                configuration.clientCertificateAuthorities = try NIOSSLCertificate.fromPEMFile(clientCA)
            } catch {
                throw CommandFailure.usage("--client-ca '\(clientCA)': \(error)")
            }
        }
        var legacyScript = MockLegacyScript()
        for token in unregistered {
            do {
                let parsed = try DeviceToken(token)
                configuration.script.unregister(parsed.hex)
                legacyScript.reject(token: parsed, with: .invalidToken)
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
            let reason = APNSReason(rawValue: String(entry[entry.index(after: equals)...]))
            if case .unknown(let name) = reason {
                let known = APNSReason.allKnown.map(\.rawValue).joined(separator: ", ")
                throw CommandFailure.usage("--fail \(token.hex): '\(name)' is not an APNs reason; use one of \(known)")
            }
            configuration.script.fail(token.hex, with: .reject(reason))
        }
        for entry in legacyFail {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let status = UInt8(parts[1]) else {
                throw CommandFailure.usage("--legacy-fail takes TOKEN=STATUS with a status byte from 0 to 255, e.g. abcd…=8, got '\(entry)'")
            }
            do {
                legacyScript.reject(token: try DeviceToken(String(parts[0])), with: LegacyStatus(rawValue: status))
            } catch {
                throw CommandFailure.usage("--legacy-fail \(entry): \(error.detail ?? "")")
            }
        }
        let feedbackTuples = try feedback.map(Self.feedbackTuple)

        // Apple's binary gateway and feedback service took only push certificates (apns-spec §4).
        var legacyClientCAs = configuration.clientCertificateAuthorities
        if let writeClientCertificate {
            guard let authority else {
                throw CommandFailure.usage("--write-client-cert issues from the generated CA; it cannot be used with --tls-cert")
            }
            let push = try authority.issuePushCertificate(topic: clientTopic)
            let pem = try push.certificate.serializeAsPEM().pemString + "\n" + push.privateKey.serializeAsPEM().pemString + "\n"
            do {
                try FileContents.write(Array(pem.utf8), to: writeClientCertificate, private: true)
            } catch {
                throw CommandFailure.usage("--write-client-cert: \(error.description)")
            }
            legacyClientCAs = (legacyClientCAs ?? []) + [try authority.tlsCertificate]
        }
        let server = try apnsPort.map { _ in try MockAPNSServer(configuration: configuration) }
        var legacyGateway: MockLegacyGateway?
        if let legacyPort {
            var legacy = MockLegacyGateway.Configuration()
            legacy.host = bind
            legacy.port = legacyPort
            legacy.tlsIdentity = configuration.tlsIdentity
            legacy.clientCertificateAuthorities = legacyClientCAs
            legacy.recordLimit = recordLimit
            legacy.script = legacyScript
            legacyGateway = try MockLegacyGateway(configuration: legacy)
        }
        var feedbackServer: MockFeedbackServer?
        if let feedbackPort {
            var service = MockFeedbackServer.Configuration()
            service.host = bind
            service.port = feedbackPort
            service.tlsIdentity = configuration.tlsIdentity
            service.clientCertificateAuthorities = legacyClientCAs
            service.tuples = feedbackTuples
            feedbackServer = try MockFeedbackServer(configuration: service)
        } else if !feedbackTuples.isEmpty {
            throw CommandFailure.usage("--feedback reports tokens on the feedback service; add --feedback-port")
        }
        if let server, let apnsPort { try await listen("--port ", on: apnsPort) { try await server.start() } }
        if let legacyGateway, let legacyPort { try await listen("--legacy-port ", on: legacyPort) { try await legacyGateway.start() } }
        if let feedbackServer, let feedbackPort { try await listen("--feedback-port ", on: feedbackPort) { try await feedbackServer.start() } }
        var webPush: MockWebPushServer?
        if let webPushPort {
            var webPushConfiguration = MockWebPushServer.Configuration()
            webPushConfiguration.host = bind
            webPushConfiguration.port = webPushPort
            // The generated CA issues its certificate too, so one --ca-file trusts every listener.
            webPushConfiguration.certificateIssuer = authority
            webPushConfiguration.maximumRecords = recordLimit
            webPushConfiguration.decryptsMessages = !webPushNoDecrypt
            try await listen("--webpush-port ", on: webPushPort) { webPush = try await MockWebPushServer.start(configuration: webPushConfiguration) }
        }
        if let writeCA, let authority {
            do {
                try FileContents.write(Array(authority.certificatePEM.utf8), to: writeCA)
            } catch {
                throw CommandFailure.usage("--write-ca: \(error.description)")
            }
        }
        if let server { Terminal.line("mock APNs listening on \(server.url)") }
        if let legacyGateway { Terminal.line("legacy gateway listening on \(legacyGateway.endpoint)") }
        if let feedbackServer { Terminal.line("feedback service listening on \(feedbackServer.endpoint)") }
        if let writeCA { Terminal.line("trust its CA with --ca-file \(writeCA)") }
        if let writeClientCertificate { Terminal.line("push certificate for \(clientTopic) in \(writeClientCertificate): --cert \(writeClientCertificate)") }
        var webPushCAFile: String?
        if let webPush {
            let path = try writeWebPushCA(webPush, shared: authority != nil)
            Terminal.line("mock Web Push listening on \(webPush.origin): POST \(webPush.origin)/subscribe gives a subscription to push to")
            Terminal.line("trust the Web Push mock's CA with \(path)")
            if webPushWriteCA == nil, path != writeCA { webPushCAFile = path }
        }
        let fcm = try await startFCM(authority: authority)
        let hms = try await startHMS(authority: authority)
        Terminal.flush()
        for await _ in interrupts { break }
        try await server?.shutdown()
        try await legacyGateway?.shutdown()
        try await feedbackServer?.shutdown()
        try await webPush?.shutdown()
        if let webPushCAFile { try? FileManager.default.removeItem(atPath: webPushCAFile) }
        try await stopFCM(fcm)
        try await stopHMS(hms)
        if let server { Terminal.line("mock APNs stopped: \(server.acceptedCount) accepted, \(server.rejectionsByReason.values.reduce(0, +)) rejected") }
        if let legacyGateway {
            let rejected = legacyGateway.rejectionsByStatus.values.reduce(0, +)
            Terminal.line("legacy gateway stopped: \(legacyGateway.acceptedCount) accepted, \(rejected) rejected")
        }
        if let feedbackServer {
            Terminal.line("feedback service stopped: \(feedbackServer.readCount) reads, \(feedbackServer.pending.count) tuples unread")
        }
        if let webPush {
            let refused = webPush.rejectionsByReason.values.reduce(0, +)
            Terminal.line("mock Web Push stopped: \(webPush.receivedCount) accepted, \(refused) refused, \(webPush.subscriptionCount) subscriptions")
        }
    }

    /// Writes the Web Push mock's CA: to --webpush-write-ca, else to the --write-ca file when the
    /// mocks share the generated CA (already written), else to a file in the temporary directory
    /// (removed at exit). Returns its path.
    private func writeWebPushCA(_ webPush: MockWebPushServer, shared: Bool) throws -> String {
        if webPushWriteCA == nil, shared, let writeCA { return writeCA }
        let path = webPushWriteCA ?? FileManager.default.temporaryDirectory.appendingPathComponent("herald-webpush-mock-ca-\(webPush.port).pem").path
        do {
            try FileContents.write(Array(webPush.certificateAuthorityPEM.utf8), to: path)
        } catch {
            throw CommandFailure.usage("--webpush-write-ca: \(error.description)")
        }
        return path
    }

    private func listen(_ option: String, on port: Int, _ start: () async throws -> Void) async throws {
        do {
            try await start()
        } catch {
            throw CommandFailure.usage("\(option)cannot listen on \(bind):\(port): \(ListenFailure.describe(error))")
        }
    }

    /// `TOKEN` or `TOKEN@UNIXTIME`; without a time, now.
    static func feedbackTuple(_ entry: String) throws -> FeedbackTuple {
        let parts = entry.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let token: DeviceToken
        do {
            token = try DeviceToken(String(parts[0]))
        } catch {
            throw CommandFailure.usage("--feedback \(entry): \(error.detail ?? "")")
        }
        guard token.bytes.count == 32 else {
            throw CommandFailure.usage("--feedback \(entry): the feedback service reports \(32)-byte tokens; this one has \(token.bytes.count) bytes")
        }
        var timestamp = Date()
        if parts.count == 2 {
            guard let seconds = UInt32(parts[1]) else {
                throw CommandFailure.usage("--feedback \(entry): the time after @ is seconds since 1970 (UNIX time), got '\(parts[1])'")
            }
            timestamp = Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        return FeedbackTuple(timestamp: timestamp, token: token)
    }
}
