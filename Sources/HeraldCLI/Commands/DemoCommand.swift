import ArgumentParser
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Histogram

/// `herald demo`: Herald's main job end to end on this machine, with no account and no setup.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Send notifications through the real client to a bundled mock APNs (TLS + HTTP/2 on 127.0.0.1).",
        discussion: """
            Starts the mock with a fresh self-signed certificate and a generated provider key, \
            marks a few tokens unregistered and a few bad, has the server send GOAWAY midway, and \
            sends the notifications. Exits 0 when every notification got the outcome it should.

            With --gateway: runs the whole gateway (herald serve) in this process on a temporary \
            SQLite database against the mock, imports --devices devices with users and tags through \
            its HTTP API, sends to a user, a tag and everyone, shows each notification's progress \
            and outcome, then prints the console's URL and an API key and serves until Ctrl-C \
            (--exit stops after the run instead).
            """
    )

    @Flag(help: "Run the whole gateway (API, queue, workers, console) on a temporary database instead of the client alone.")
    var gateway = false

    @Option(help: "With --gateway: how many devices to import.")
    var devices: Int = 100_000

    @Option(help: "With --gateway: the port the API and console listen on (0 picks a free one).")
    var port: Int = 0

    @Flag(name: .customLong("exit"), help: "With --gateway: stop after the run instead of serving until Ctrl-C.")
    var exitAfterRun = false

    @Option(help: "How many notifications to send.")
    var count: Int = 100_000

    @Option(help: "The most HTTP/2 connections.")
    var connections: Int = 4

    @Option(help: "The most notifications in flight.")
    var concurrency: Int = 1000

    func validate() throws {
        if gateway {
            guard (1000...10_000_000).contains(devices) else { throw ValidationError("--devices must be from 1000 to 10000000") }
            guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
        } else if exitAfterRun || port != 0 {
            throw ValidationError("--exit and --port go with --gateway")
        }
        guard count >= 20 else { throw ValidationError("--count must be at least 20, so the scripted faults fit") }
        guard connections >= 1, concurrency >= 1 else { throw ValidationError("--connections and --concurrency must be at least 1") }
    }

    func run() async throws {
        Self.noteDebugBuild()
        if gateway {
            try await GatewayDemo(devices: devices, port: port, exitAfterRun: exitAfterRun).run()
            return
        }
        let key = ProviderKey.generate()
        let topic = "com.example.herald.demo"
        // Which notifications get which treatment: spread over the run.
        let unregistered = [count / 7, count / 3, (count * 5) / 6]
        let bad = [count / 5, (count * 3) / 4]
        let goAway = count / 2
        @Sendable func token(_ index: Int) -> DeviceToken {
            var bytes = [UInt8](repeating: 0, count: 32)
            withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
            bytes[0] = 0xDE
            return try! DeviceToken(bytes: bytes)
        }

        var mockConfiguration = MockAPNSServer.Configuration()
        mockConfiguration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
        mockConfiguration.recordLimit = 0
        for index in unregistered { mockConfiguration.script.unregister(token(index).hex) }
        for index in bad { mockConfiguration.script.fail(token(index).hex, with: .reject(.badDeviceToken)) }
        mockConfiguration.script.fail(token(goAway).hex, with: .goAway(reason: "Shutdown"), times: 1)
        let mock = try MockAPNSServer(configuration: mockConfiguration)
        try await mock.start()

        var configuration = APNSClient.Configuration(environment: mock.environment, credentials: .providerToken(key))
        configuration.trustRoots = .only(mock.trustRoots)
        configuration.pool.maximumConnections = connections
        configuration.pool.maximumInFlight = concurrency

        Terminal.line("herald demo: mock APNs at \(mock.url) (self-signed TLS, HTTP/2); sending \(count) notifications")
        Terminal.line("  scripted: \(unregistered.count) unregistered tokens, \(bad.count) bad tokens, a GOAWAY at notification \(goAway)")
        Terminal.flush()

        let payload = try Payload(aps: APS(alert: .titled("Herald demo", body: "Hello from a real TLS + HTTP/2 send."), badge: 1)).encode()
        let headers = PushHeaders(pushType: .alert, topic: topic)
        let notifications = GeneratedSequence(count: count) { PushNotification(token: token($0), headers: headers, payload: payload) }
        let expectedRejections: [Int: String] = Dictionary(uniqueKeysWithValues: unregistered.map { ($0, "Unregistered") } + bad.map { ($0, "BadDeviceToken") })

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var tally = OutcomeTally()
        var unexpected: [String] = []
        let progress = ProgressBar(total: count, label: "sending")
        let clock = ContinuousClock()
        let started = clock.now
        try await withAPNSClient(configuration: configuration) { client in
            for try await outcome in client.send(contentsOf: notifications) {
                let micros = outcome.elapsed.components.seconds * 1_000_000 + outcome.elapsed.components.attoseconds / 1_000_000_000_000
                _ = histogram.record(UInt64(max(1, micros)))
                tally.add(outcome)
                let expected = expectedRejections[outcome.index]
                switch outcome.result {
                case .accepted:
                    if let expected { unexpected.append("notification \(outcome.index) was accepted, expected \(expected)") }
                case .rejected(let error):
                    if expected != error.reason.rawValue {
                        unexpected.append("notification \(outcome.index) was rejected with \(error.reason), expected \(expected ?? "acceptance")")
                    } else if error.reason == .unregistered && error.timestamp == nil {
                        unexpected.append("notification \(outcome.index): Unregistered without its timestamp")
                    }
                case .failed(let error):
                    unexpected.append("notification \(outcome.index) failed: \(error)")
                }
                progress.advance()
            }
        }
        let seconds = (clock.now - started).seconds
        progress.finish()
        let mockAccepted = mock.acceptedCount
        let connectionsOpened = mock.connectionCount
        try await mock.shutdown()
        if mockAccepted != tally.accepted {
            unexpected.append("the mock accepted \(mockAccepted) notifications, the client reported \(tally.accepted)")
        }

        func ms(_ percentile: Double) -> String { format(Double(histogram.valueAtPercentile(percentile)) / 1000) }
        Terminal.line("accepted    \(tally.accepted)")
        Terminal.line("rejected    \(tally.rejectedCount)" + (tally.rejected.isEmpty ? "" : " (\(OutcomeTally.breakdown(tally.rejected)))"))
        if !tally.failed.isEmpty {
            Terminal.line("failed      \(tally.failedCount) (\(OutcomeTally.breakdown(tally.failed)))")
        }
        Terminal.line("retried     \(tally.retried)")
        Terminal.line("connections \(connectionsOpened) opened (the GOAWAY one replaced; its unanswered notifications re-sent)")
        Terminal.line("rate        \(Int(Double(count) / seconds)) notifications/s (\(format(seconds)) s)")
        Terminal.line("latency     p50 \(ms(50)) ms, p99 \(ms(99)) ms")
        if unexpected.isEmpty {
            Terminal.line("every notification got its expected outcome")
            Terminal.flush()
        } else {
            for line in unexpected.prefix(20) { Terminal.error(line) }
            if unexpected.count > 20 { Terminal.error("… and \(unexpected.count - 20) more") }
            throw ExitCode(1)
        }
    }

    /// A debug build sends several times slower than a release build: say so before its figures.
    static func noteDebugBuild() {
        #if DEBUG
        Terminal.line("note: this is a debug build; its figures are several times below Herald's. For real ones: swift run -c release herald demo")
        Terminal.flush()
        #endif
    }

    /// A benchmark's note, on stderr (its stdout may be JSON): a debug build's figures are not Herald's.
    static func noteDebugBench() {
        #if DEBUG
        Terminal.error("note: this is a debug build; its figures are several times below Herald's. For real ones: swift build -c release, then .build/release/herald bench …")
        #endif
    }
}
