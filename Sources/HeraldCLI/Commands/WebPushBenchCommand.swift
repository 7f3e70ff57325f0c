import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldWebPush
import HeraldWebPushMock
import NIOCore
import NIOSSL

/// `herald bench webpush`: Web Push messages/s and CPU per message against the mock push
/// service, and the same messages sent with Python's pywebpush to the same mock, in one run.
struct WebPushBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush",
        abstract: "Measure Web Push sending (encryption, VAPID, HTTP/2) against the mock push service, beside pywebpush.",
        discussion: """
            Without --mock, starts the mock push service in this process (TLS, HTTP/2 and HTTP/1.1 \
            on 127.0.0.1; it checks VAPID but does not decrypt, so its cost stays small); CPU then \
            includes the mock's. With --mock (a `herald mock --webpush-port N` elsewhere, e.g. on \
            another core with taskset) the CPU figures are Herald's alone. Then sends \
            --pywebpush-count messages with pywebpush (Python 3 with pywebpush installed) to the \
            same mock, one session, as its users do, and prints both rates and their ratio.
            """
    )

    @Option(help: "How many messages Herald sends.")
    var count: Int = 20_000
    @Option(help: "How many subscriptions the messages are spread over.")
    var subscriptions: Int = 100
    @Option(help: "Messages in flight at once.")
    var concurrency: Int = 200
    @Option(help: "How many messages pywebpush sends (0: skip it).")
    var pywebpushCount: Int = 300
    @Flag(help: "HTTP/1.1 only (no h2 in ALPN).")
    var http1 = false
    @Option(help: ArgumentHelp("An external mock push service (herald mock --webpush-port) instead of the in-process one.", valueName: "https://HOST:PORT"))
    var mock: String?
    @Option(help: ArgumentHelp("The external mock's CA certificate (PEM).", valueName: "FILE"))
    var caFile: String?
    @Option(help: ArgumentHelp(
        "With --mock: the messages go here instead, to subscriptions made in this process (any key; a sink that answers 201 to POST /push/N, e.g. nginx: the client's cost alone).",
        valueName: "https://HOST:PORT"))
    var sink: String?

    func validate() throws {
        guard count >= 1, subscriptions >= 1, concurrency >= 1, pywebpushCount >= 0 else {
            throw ValidationError("--count, --subscriptions and --concurrency must be at least 1; --pywebpush-count at least 0")
        }
        guard (mock == nil) == (caFile == nil) else { throw ValidationError("--mock and --ca-file go together") }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        var server: MockWebPushServer?
        let origin: String
        let caPEM: String
        if let mock, let caFile {
            origin = mock
            caPEM = String(decoding: try FileContents.read(caFile, limit: 1 << 20), as: UTF8.self)
        } else {
            var configuration = MockWebPushServer.Configuration()
            configuration.decryptsMessages = false
            configuration.maximumRecords = 0
            let started = try await MockWebPushServer.start(configuration: configuration)
            server = started
            origin = started.origin
            caPEM = started.certificateAuthorityPEM
        }
        let trust = try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8))
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-webpush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            let key = VAPIDKey.generate()
            let targets: [WebPushSubscription]
            if let sink {
                targets = try Self.sinkSubscriptions(origin: sink, count: subscriptions)
            } else {
                targets = try await subscribe(origin: origin, trust: trust, count: subscriptions, key: key)
            }
            let payload = Array(#"{"web_push":8030,"notification":{"title":"Herald benchmark","body":"A short body of about one hundred bytes.","navigate":"https://example.com/"}}"#.utf8)
            let message = try WebPushMessage(payload: payload, timeToLive: 3600, urgency: .normal)
            var configuration = WebPushClient.Configuration(vapid: try VAPIDSigner(key: key, subject: "mailto:bench@example.com"))
            configuration.additionalTrustRoots = trust
            configuration.maximumInFlight = concurrency
            configuration.allowsHTTP2 = !http1
            configuration.retry = .none
            // The mock or the sink named on the command line: a loopback or private address.
            configuration.subscriptionPolicy = .init(allowsPrivateAddresses: true)

            let before = ProcessStats.now()
            let clock = ContinuousClock()
            let startedAt = clock.now
            let sent = try await withWebPushClient(configuration: configuration) { client in
                await GroupedSending.run(count: count, width: concurrency) { part in
                    await client.send(message, toEach: part.map { targets[$0 % targets.count] })
                }
            }
            let accepted = sent.accepted
            let seconds = (clock.now - startedAt).seconds
            let after = ProcessStats.now()
            let rate = Double(accepted) / seconds
            let cpuMicros = (after.cpuSeconds - before.cpuSeconds) / Double(count) * 1e6
            Terminal.line("herald bench webpush: \(count) messages to \(subscriptions) subscriptions at \(server == nil ? origin : "the in-process mock (\(origin))"), \(concurrency) in flight, \(http1 ? "HTTP/1.1" : "HTTP/2 by ALPN")")
            Terminal.line("accepted    \(accepted)\(sent.failures.first.map { ", failed \(sent.failed): \($0)" } ?? "")")
            Terminal.line("rate        \(Int(rate)) messages/s in \(format(seconds)) s")
            Terminal.line("cpu         \(format(cpuMicros)) µs per message\(server == nil ? "" : " (the in-process mock's included)")")
            after.printUsage(since: before, over: seconds)

            if pywebpushCount > 0 {
                let python = try await runPywebpush(origin: origin, caPEM: caPEM, key: key, target: targets[0], scratch: scratch)
                Terminal.line("pywebpush   \(Int(python)) messages/s (\(pywebpushCount) messages, one requests session)")
                Terminal.line("ratio       \(format(rate / python))× pywebpush")
            }
            Terminal.flush()
            try await server?.shutdown()
            if accepted != count { throw ExitCode(1) }
        } catch {
            try? await server?.shutdown()
            throw error
        }
    }

    /// Subscriptions from the mock's `POST /subscribe`, bound to `key`.
    /// Subscriptions at a sink, made here: a fresh browser key and secret each, as a browser
    /// would have them (the sink decrypts nothing; the client encrypts for each all the same).
    private static func sinkSubscriptions(origin: String, count: Int) throws -> [WebPushSubscription] {
        try (0..<count).map { index in
            let browser = VAPIDKey.generate()
            return try WebPushSubscription(
                endpoint: "\(origin)/push/\(index)", p256dh: browser.publicKeyBase64URL,
                auth: Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) }), policy: .init(allowsPrivateAddresses: true))
        }
    }

    private func subscribe(origin: String, trust: [NIOSSLCertificate], count: Int, key: VAPIDKey) async throws -> [WebPushSubscription] {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(trust)]
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
        do {
            var result: [WebPushSubscription] = []
            for _ in 0..<count {
                var request = HTTPClientRequest(url: origin + "/subscribe")
                request.method = .POST
                request.body = .bytes(ByteBuffer(string: #"{"applicationServerKey":"\#(key.publicKeyBase64URL)"}"#))
                let response = try await http.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 16 << 10)
                guard response.status.code == 201 else { throw CommandFailure("the mock answered POST /subscribe with \(response.status.code)") }
                result.append(try WebPushSubscription(json: Array(buffer: body), policy: .init(allowsPrivateAddresses: true)))
            }
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    /// pywebpush's rate sending `pywebpushCount` messages to `target`, in a Python subprocess.
    private func runPywebpush(origin: String, caPEM: String, key: VAPIDKey, target: WebPushSubscription, scratch: URL) async throws -> Double {
        let caPath = scratch.appendingPathComponent("ca.pem").path
        let keyPath = scratch.appendingPathComponent("vapid.pem").path
        let subscriptionPath = scratch.appendingPathComponent("subscription.json").path
        try Data(caPEM.utf8).write(to: URL(fileURLWithPath: caPath))
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        try Data(target.json.jsonString.utf8).write(to: URL(fileURLWithPath: subscriptionPath))
        let script = """
            import json, sys, time, requests
            from pywebpush import webpush
            sub = json.load(open(sys.argv[1])); count = int(sys.argv[4])
            session = requests.Session(); session.trust_env = False; session.verify = sys.argv[2]
            data = '{"web_push":8030,"notification":{"title":"Herald benchmark","body":"A short body of about one hundred bytes.","navigate":"https://example.com/"}}'
            start = time.monotonic()
            for _ in range(count):
                r = webpush(sub, data, vapid_private_key=sys.argv[3], vapid_claims={"sub": "mailto:bench@example.com"}, ttl=3600, requests_session=session)
                assert r.status_code == 201, r.status_code
            print(count / (time.monotonic() - start))
            """
        let printed = try await PythonPeer.run(
            script, arguments: [subscriptionPath, caPath, keyPath, String(pywebpushCount)], timeout: .seconds(600), scratch: scratch,
            hint: "is pywebpush installed? python3 -m pip install pywebpush")
        guard let rate = Double(printed) else { throw CommandFailure("pywebpush printed no rate: \(PeerText(printed, limit: 200))") }
        return rate
    }
}
