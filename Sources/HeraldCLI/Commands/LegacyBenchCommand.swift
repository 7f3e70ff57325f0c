import ArgumentParser
import HeraldCore
import HeraldIdentity
import HeraldLegacy
import HeraldAPNSMock
import NIOCore
import NIOPosix
import NIOSSL

/// `herald legacy bench`: legacy notifications per second through a gateway (the in-process mock
/// gateway by default), optionally side by side with a raw writer of pre-encoded frames.
struct LegacyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure legacy sending throughput (against the in-process mock gateway by default).",
        discussion: """
            Without --gateway, starts Herald's mock gateway in this process (real TLS with a client \
            certificate on 127.0.0.1) and times until it has accepted every notification. With \
            --compare-raw it then times a bare TLS writer of pre-encoded frames against a fresh mock: \
            the most the mock and the loopback can take, for a ratio. Figures include the mock's own CPU time.
            """
    )

    @Option(help: ArgumentHelp("Send to this gateway instead of the in-process mock (needs --cert).", valueName: "HOST:PORT"))
    var gateway: String?

    @Option(help: "How many notifications to send.")
    var count: Int = 100_000

    @Option(help: ArgumentHelp("The command: 0, 1 or 2.", valueName: "0|1|2"))
    var command: Int = 2

    @Option(name: .customLong("framing-timeout"), help: ArgumentHelp("Milliseconds frames wait to be batched; negative writes each at once.", valueName: "MS"))
    var framingTimeout: Int = 10

    @Option(help: ArgumentHelp("Seconds without an error response after which a notification counts as accepted.", valueName: "SECONDS"))
    var settle: Double = 1

    @Option(name: .customLong("max-in-flight"), help: ArgumentHelp("Notifications in flight at most (written and unsettled included); the rate cannot pass this many per --settle interval. Default: the library's.", valueName: "N"))
    var maximumInFlight: Int?

    @Flag(name: .customLong("compare-raw"), help: "Also time a bare TLS writer of pre-encoded frames (in-process mock only).")
    var compareRaw = false

    @OptionGroup(title: "Certificate (for --gateway)") var certificate: CertificateOptions
    @OptionGroup(title: "Trust") var trust: TrustOptions

    @Option(help: "Output format: text or json.")
    var output: OutputFormat = .text

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be at least 1") }
        guard (0...2).contains(command) else { throw ValidationError("--command must be 0, 1 or 2") }
        guard settle > 0, settle <= 3600 else { throw ValidationError("--settle must be more than 0 and at most 3600 seconds") }
        if let maximumInFlight, maximumInFlight < 1 { throw ValidationError("--max-in-flight must be at least 1") }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        let command = HeraldLegacy.LegacyCommand(rawValue: UInt8(self.command))!
        let payload = try Payload(aps: APS(alert: .text("Herald benchmark: a short alert body of about one hundred bytes."))).encode()
        let tokens = try (0..<1024).map { i in try DeviceToken(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i &* 13) }) }
        let notifications = try tokens.map { try LegacyNotification(token: $0, payload: payload) }
        let count = self.count
        let sequence = GeneratedSequence(count: count) { notifications[$0 % notifications.count] }

        var mock: MockLegacyGateway?
        var configuration: LegacyClient.Configuration
        let clientAuthority = try MockCertificateAuthority(name: "Herald bench client CA")
        if let gateway {
            guard let identity = try certificate.makeIdentity() else {
                throw CommandFailure.usage("--gateway needs the push certificate: --cert FILE.p12|FILE.pem")
            }
            configuration = LegacyClient.Configuration(gateway: try parseEndpoint(gateway, option: "--gateway"), identity: identity)
            configuration.trustRoots = try trust.trustRoots()
        } else {
            let server = try await Self.startMock(clientAuthority: clientAuthority)
            mock = server
            configuration = LegacyClient.Configuration(gateway: server.endpoint, identity: try clientAuthority.issuePushCertificate(topic: "com.example.herald"))
            configuration.trustRoots = .only(server.trustRoots)
        }
        configuration.command = command
        configuration.framingTimeout = .milliseconds(framingTimeout)
        configuration.settleInterval = .seconds(settle)
        if let maximumInFlight { configuration.maximumInFlight = maximumInFlight }

        var tally = OutcomeTally()
        let before = ProcessStats.now()
        let clock = ContinuousClock()
        let started = clock.now
        var deliveredAfter: Duration?
        let progress = ProgressBar(total: count, label: "sending", enabled: !Terminal.stdoutIsTerminal)
        let inProcess = mock
        try await withLegacyClient(configuration: configuration) { client in
            // The gateway says nothing on success: time until the mock has them all.
            async let delivered: Duration? = Self.waitUntil(inProcess, accepted: count, since: started)
            for try await outcome in client.send(contentsOf: sequence) {
                tally.add(outcome)
                progress.advance()
            }
            deliveredAfter = await delivered
        }
        let allOutcomes = (clock.now - started).seconds
        progress.finish()
        let after = ProcessStats.now()
        try await mock?.shutdown()

        // Without a mock to ask, the last outcome came one settle interval after the last write.
        let seconds = deliveredAfter?.seconds ?? max(0.001, allOutcomes - settle)
        let rate = Double(count) / seconds
        var raw: (seconds: Double, rate: Double)?
        if compareRaw, mock != nil {
            raw = try await Self.rawWriter(count: count, notifications: notifications, command: command, clientAuthority: clientAuthority)
        }
        switch output {
        case .text:
            Terminal.line("herald legacy bench: \(count) notifications, command \(command.rawValue), to \(mock == nil ? configuration.gateway.description : "the in-process mock gateway (\(configuration.gateway))")")
            tally.printCounts()
            Terminal.line("rate        \(Int(rate)) notifications/s (\(format(seconds)) s until \(mock == nil ? "the last write" : "the gateway had them all"); outcomes after \(format(allOutcomes)) s)")
            // Each notification holds an in-flight permit until it settles.
            let ceiling = Double(configuration.maximumInFlight) / settle
            Terminal.line("in flight   at most \(configuration.maximumInFlight) for a \(format(settle)) s settle interval: at most \(Int(ceiling)) notifications/s\(rate > ceiling * 0.8 ? " (near this bound: raise --max-in-flight or lower --settle)" : "")")
            if let raw {
                Terminal.line("raw writer  \(Int(raw.rate)) notifications/s (\(format(raw.seconds)) s, pre-encoded 64 KiB writes); herald/raw = \(format(rate / raw.rate))")
            }
            after.printUsage(since: before, over: allOutcomes)
        case .json:
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("count"); writer.int(count)
            writer.key("command"); writer.int(Int(command.rawValue))
            tally.writeCounts(into: &writer)
            writer.key("seconds"); writer.double(seconds)
            writer.key("rate"); writer.double(rate.rounded())
            writer.key("outcomes_seconds"); writer.double(allOutcomes)
            if let raw {
                writer.key("raw_rate"); writer.double(raw.rate.rounded())
                writer.key("ratio_to_raw"); writer.double(rate / raw.rate)
            }
            after.writeUsage(since: before, into: &writer)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
        Terminal.flush()
        if tally.accepted != count { throw ExitCode(1) }
    }

    private static func startMock(clientAuthority: MockCertificateAuthority) async throws -> MockLegacyGateway {
        var configuration = MockLegacyGateway.Configuration()
        configuration.recordLimit = 0
        configuration.clientCertificateAuthorities = [try clientAuthority.tlsCertificate]
        let server = try MockLegacyGateway(configuration: configuration)
        try await server.start()
        return server
    }

    /// How long after `since` the mock had accepted `count` (polled every 2 ms, for at most 10 minutes).
    private static func waitUntil(_ mock: MockLegacyGateway?, accepted count: Int, since: ContinuousClock.Instant) async -> Duration? {
        guard let mock else { return nil }
        let clock = ContinuousClock()
        for _ in 0..<300_000 {
            if mock.acceptedCount >= count { return clock.now - since }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// A bare TLS client writing pre-encoded frames in 64 KiB writes to a fresh mock: the ceiling.
    private static func rawWriter(
        count: Int, notifications: [LegacyNotification], command: HeraldLegacy.LegacyCommand, clientAuthority: MockCertificateAuthority
    ) async throws -> (seconds: Double, rate: Double) {
        let server = try await startMock(clientAuthority: clientAuthority)
        var chunks: [ByteBuffer] = []
        var chunk = ByteBuffer()
        for index in 0..<count {
            let notification = notifications[index % notifications.count]
            if chunk.readableBytes + LegacyEncoder.size(of: notification, command: command) > 65_535 {
                chunks.append(chunk)
                chunk = ByteBuffer()
            }
            try LegacyEncoder.write(notification, identifier: UInt32(index + 1), command: command, into: &chunk)
        }
        chunks.append(chunk)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(server.trustRoots)
        try clientAuthority.issuePushCertificate(topic: "com.example.herald").apply(to: &tls)
        let context = try NIOSSLContext(configuration: tls)
        let clock = ContinuousClock()
        let started = clock.now
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                }
            }
            .connect(host: server.endpoint.host, port: server.endpoint.port).get()
        for chunk in chunks { channel.write(chunk, promise: nil) }
        channel.flush()
        let delivered = await waitUntil(server, accepted: count, since: started)
        try await channel.close()
        try await server.shutdown()
        let seconds = (delivered ?? (clock.now - started)).seconds
        return (seconds, Double(count) / seconds)
    }
}
