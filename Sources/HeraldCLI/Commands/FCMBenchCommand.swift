import ArgumentParser
import Foundation
import HeraldCore
import HeraldFCM
import HeraldFCMMock
import NIOSSL

/// `herald bench fcm`: FCM messages/s and CPU per message against the mock FCM, beside Herald's
/// APNs client sending as many to the mock APNs and Google's firebase-admin sending to the same
/// mock FCM, in one run.
struct FCMBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "Measure FCM sending (OAuth, HTTP/2) against the mock FCM, beside Herald's APNs client and firebase-admin.",
        discussion: """
            Without --mock, starts the mock FCM in this process (TLS, HTTP/2 on 127.0.0.1). It checks \
            the access token, the project and the body's size of every message but, with \
            validatesMessages off, neither parses nor validates the message (the mock APNs reads no \
            payload either). CPU then includes the mock's; it serves h2 on Herald's own HTTP/2 layer, \
            as the mock APNs does, and still costs more per message (TLS, an access-token check, a \
            JSON answer). --sink sends to a sink instead (e.g. nginx: scripts/bench-clients-sink.sh). \
            With --mock (a `herald mock --fcm-port N` elsewhere, which validates every message) the \
            FCM CPU figures are Herald's alone. Herald sends --count messages over --tokens \
            registration tokens with FCMClient's grouped send, then as many notifications to the \
            mock APNs in this process with the APNs client (both mocks: records off, 100 streams \
            per connection), and prints the FCM ÷ APNs rate (the goal: at least 0.8). Then \
            --firebase-admin-count messages go through Google's firebase-admin (Python 3 with \
            firebase-admin installed: messaging.send_each_async, httpx over HTTP/2, batches of \
            500, after one message to warm it up) to the same mock FCM, and it prints Herald's \
            rate ÷ firebase-admin's (the goal: at least 20).
            """
    )

    @Option(help: "How many messages Herald sends to FCM, and notifications to APNs.")
    var count: Int = 20_000
    @Option(help: "How many registration tokens (and APNs device tokens) the messages are spread over.")
    var tokens: Int = 1000
    @Option(help: "The most HTTP/2 connections each client opens.")
    var connections: Int = 2
    @Option(help: "Messages in flight at once.")
    var concurrency: Int = 200
    @Option(help: "How many messages firebase-admin sends (0: skip it).")
    var firebaseAdminCount: Int = 2_000
    @Option(help: ArgumentHelp("An external mock FCM (herald mock --fcm-port) instead of the in-process one.", valueName: "https://HOST:PORT"))
    var mock: String?
    @Option(help: ArgumentHelp("The external mock's CA certificate (PEM).", valueName: "FILE"))
    var caFile: String?
    @Option(help: ArgumentHelp("The external mock's service-account key file (herald mock --fcm-write-service-account).", valueName: "FILE"))
    var serviceAccount: String?
    @Option(help: "Output format: text or json.")
    var output: OutputFormat = .text
    @Option(help: ArgumentHelp(
        "With --mock: messages:send goes here instead (access tokens still come from the mock): a sink that answers 200 with a message name, e.g. nginx: the client's cost alone.",
        valueName: "https://HOST:PORT"))
    var sink: String?
    @Flag(help: "FCM alone: no APNs run beside it (for scripts that run the clients side by side themselves).")
    var fcmOnly = false

    /// The HTTP/2 streams each mock allows per connection: the FCM mock's HTTP/2 server's
    /// default (swift-nio-http2's), given to the mock APNs too.
    static let streamsPerConnection = 100

    func validate() throws {
        guard count >= 1, tokens >= 1, connections >= 1, concurrency >= 1, firebaseAdminCount >= 0 else {
            throw ValidationError("--count, --tokens, --connections and --concurrency must be at least 1; --firebase-admin-count at least 0")
        }
        guard (mock == nil) == (caFile == nil), (mock == nil) == (serviceAccount == nil) else {
            throw ValidationError("--mock, --ca-file and --service-account go together")
        }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        if let mock, let caFile, let serviceAccount {
            let account: FCMServiceAccount
            let trust: [NIOSSLCertificate]
            do {
                account = try FCMServiceAccount(contentsOfFile: serviceAccount)
            } catch {
                throw CommandFailure.usage("--service-account: \(error.message)")
            }
            do {
                trust = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw CommandFailure.usage("--ca-file '\(caFile)': cannot read PEM certificates (\(error))")
            }
            var target = Target(origin: mock, account: account, trust: trust, caFile: caFile, accountFile: serviceAccount, inProcess: false)
            target.sink = sink
            try await measure(target, scratch: scratch)
        } else {
            var configuration = MockFCMServer.Configuration()
            configuration.maximumRecords = 0
            configuration.validatesMessages = false
            try await withMockFCMServer(configuration: configuration) { server in
                let caFile = scratch.appendingPathComponent("ca.pem").path
                let accountFile = scratch.appendingPathComponent("service-account.json").path
                try FileContents.write(Array(server.certificateAuthorityPEM.utf8), to: caFile)
                try FileContents.write(server.serviceAccountJSON, to: accountFile, private: true)
                let target = Target(
                    origin: server.origin, account: server.serviceAccount, trust: [server.certificateAuthority], caFile: caFile,
                    accountFile: accountFile, inProcess: true)
                try await measure(target, scratch: scratch)
            }
        }
    }

    /// The mock FCM the messages go to.
    struct Target {
        var origin: String
        var account: FCMServiceAccount
        var trust: [NIOSSLCertificate]
        var caFile: String
        var accountFile: String
        /// Where messages:send goes instead of `origin` (a sink), if anywhere.
        var sink: String? = nil
        var inProcess: Bool
    }

    /// Herald to FCM, Herald to APNs, firebase-admin to FCM; prints the figures.
    private func measure(_ target: Target, scratch: URL) async throws {
        let fcm = try await sendFCM(to: target)
        let apns = fcmOnly ? nil : try await sendAPNs()
        let python = firebaseAdminCount > 0 ? try await sendFirebaseAdmin(to: target, scratch: scratch) : nil
        let usage = ProcessStats.now()
        switch output {
        case .text:
            let place = target.inProcess ? "the in-process mock FCM (\(target.origin))" : target.origin
            Terminal.line("herald bench fcm: \(count) messages to \(tokens) registration tokens at \(place), \(connections) connection(s), \(concurrency) in flight")
            Terminal.line("fcm         \(fcm.summary(unit: "messages", mockIncluded: target.inProcess))")
            if let apns {
                Terminal.line("apns        \(apns.summary(unit: "notifications", mockIncluded: true))")
                Terminal.line("ratio       \(format(fcm.ratio(to: apns)))× APNs (goal ≥ 0.8)")
            }
            if let python {
                Terminal.line("firebase-admin \(python.summary(unit: "messages", mockIncluded: false)) (Python's CPU; send_each_async, HTTP/2, batches of 500)")
                Terminal.line("ratio       \(format(fcm.ratio(to: python)))× firebase-admin (goal ≥ 20)")
            }
            Terminal.line("peak memory \(format(Double(usage.peakResidentBytes) / 1_048_576)) MiB")
            if target.inProcess {
                Terminal.line("note        the in-process mock FCM checks each access token but neither parses nor validates messages (an")
                Terminal.line("            external one does); its CPU is in the figures: --mock elsewhere gives the FCM client's alone")
            }
        case .json:
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("count"); writer.int(count)
            writer.key("tokens"); writer.int(tokens)
            writer.key("connections"); writer.int(connections)
            writer.key("concurrency"); writer.int(concurrency)
            writer.key("mock"); writer.string(target.inProcess ? "in-process" : "external")
            writer.key("fcm"); fcm.write(into: &writer)
            if let apns {
                writer.key("apns"); apns.write(into: &writer)
                writer.key("fcm_to_apns"); writer.double(fcm.ratio(to: apns))
            }
            if let python {
                writer.key("firebase_admin")
                python.write(into: &writer)
                writer.key("herald_to_firebase_admin"); writer.double(fcm.ratio(to: python))
            }
            writer.key("peak_memory_bytes"); writer.int(usage.peakResidentBytes)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
        Terminal.flush()
        guard fcm.accepted == count, apns.map({ $0.accepted == count }) ?? true, python.map({ $0.accepted == firebaseAdminCount }) ?? true else { throw ExitCode(1) }
    }
}
