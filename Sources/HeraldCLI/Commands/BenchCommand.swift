import ArgumentParser
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Histogram
import NIOCore

/// `herald bench`: the client's benchmark (the default) and the store's.
struct BenchGroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure sending throughput and latency, or the store's.",
        subcommands: [BenchCommand.self, StoreBenchCommand.self, WebPushBenchCommand.self, FCMBenchCommand.self, HMSBenchCommand.self, IsolationBenchCommand.self],
        defaultSubcommand: BenchCommand.self
    )
}

/// `herald bench [client]`: sends many notifications as fast as the server takes them and reports
/// the rate, latency percentiles, CPU time and peak memory.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "Measure sending throughput and latency (against the in-process mock by default).",
        discussion: """
            Without --host, starts Herald's mock APNs server in this process (real TLS and HTTP/2 on \
            127.0.0.1) with a generated key. Figures include the mock's own CPU time in that case.
            """
    )

    @Option(help: ArgumentHelp("Send to this server instead of the in-process mock.", valueName: "https://HOST:PORT"))
    var host: String?

    @Option(help: "How many notifications to send.")
    var count: Int = 100_000

    @Option(help: ArgumentHelp(
        "How many devices the notifications go to, in turn (each a token of its own, made before the clock starts).",
        discussion: "At --count, every notification goes to a device of its own, as a broadcast's do."))
    var devices: Int = 1024

    @OptionGroup(title: "Connections") var tuning: ConnectionTuningOptions
    @OptionGroup(title: "Token authentication") var credentials: CredentialOptions
    @OptionGroup(title: "Certificate authentication") var certificate: CertificateOptions

    @Option(help: "apns-topic (default: com.example.herald).")
    var topic: String = "com.example.herald"

    @OptionGroup(title: "Payload (default: a ~100-byte alert)") var payloadOptions: PayloadOptions

    @Option(help: "Output format: text or json.")
    var output: OutputFormat = .text

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be at least 1") }
        guard (1...Self.maximumDevices).contains(devices) else {
            throw ValidationError("--devices must be from 1 to \(Self.maximumDevices) (each device's token is held in memory)")
        }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        var mock: MockAPNSServer?
        var environment: APNSEnvironment
        var trust = try tuning.trustRoots()
        var key = try credentials.makeProviderKey()
        let identity = try certificate.makeIdentity()
        if let host {
            do {
                environment = try APNSEnvironment(url: host)
            } catch {
                throw CommandFailure.usage("--host: \(error.message)")
            }
            if key == nil && identity == nil { key = ProviderKey.generate() }
        } else {
            if key == nil && identity == nil { key = ProviderKey.generate() }
            var configuration = MockAPNSServer.Configuration()
            configuration.recordLimit = 0
            configuration.maximumConcurrentStreams = max(1000, tuning.concurrency)
            if let key { configuration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID) }
            let server = try MockAPNSServer(configuration: configuration)
            try await server.start()
            mock = server
            environment = server.environment
            trust = .only(server.trustRoots)
        }

        let payload = try makePayload()
        let headers = PushHeaders(pushType: .alert, topic: topic)
        let tokens = try Self.tokens(min(devices, count))
        let notifications = GeneratedSequence(count: count) { PushNotification(token: tokens[$0 % tokens.count], headers: headers, payload: payload) }

        var configuration = APNSClient.Configuration(
            environment: environment, credentials: identity.map { .certificate($0) } ?? .providerToken(key!)
        )
        configuration.trustRoots = trust
        configuration.pool.maximumConnections = tuning.connections
        configuration.pool.maximumInFlight = tuning.concurrency
        configuration.retry = .none

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var tally = OutcomeTally()
        let before = ProcessStats.now()
        let clock = ContinuousClock()
        let started = clock.now
        let progress = ProgressBar(total: count, label: "sending")
        try await withAPNSClient(configuration: configuration) { client in
            for try await outcome in client.send(contentsOf: notifications) {
                _ = histogram.record(UInt64(max(1, outcome.elapsed.components.seconds * 1_000_000 + outcome.elapsed.components.attoseconds / 1_000_000_000_000)))
                tally.add(outcome)
                progress.advance()
            }
        }
        let seconds = (clock.now - started).seconds
        progress.finish()
        let after = ProcessStats.now()
        try await mock?.shutdown()

        let rate = Double(count) / seconds
        func ms(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1000 }
        switch output {
        case .text:
            Terminal.line("herald bench: \(count) notifications to \(mock == nil ? environment.authority : "the in-process mock (\(environment.authority))"), \(tuning.connections) connection(s), \(tuning.concurrency) in flight")
            tally.printCounts()
            Terminal.line("rate        \(Int(rate)) notifications/s in \(format(seconds)) s")
            Terminal.line("latency     p50 \(format(ms(50))) ms, p90 \(format(ms(90))) ms, p99 \(format(ms(99))) ms, max \(format(Double(histogram.max) / 1000)) ms")
            after.printUsage(since: before, over: seconds)
        case .json:
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("count"); writer.int(count)
            writer.key("connections"); writer.int(tuning.connections)
            writer.key("concurrency"); writer.int(tuning.concurrency)
            tally.writeCounts(into: &writer)
            writer.key("seconds"); writer.double(seconds)
            writer.key("rate"); writer.double(rate.rounded())
            writer.key("latency_ms")
            writer.value(["p50": .double(ms(50)), "p90": .double(ms(90)), "p99": .double(ms(99)), "max": .double(Double(histogram.max) / 1000)])
            after.writeUsage(since: before, into: &writer)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
        Terminal.flush()
        if tally.accepted != count { throw ExitCode(1) }
    }

    /// The most devices `--devices` takes: 10 million tokens hold about 1.3 GiB (300,000 took
    /// 41 MiB more than 1,024 here).
    static let maximumDevices = 10_000_000

    /// `count` distinct 32-byte tokens, the same on every run (spread over the key space, as real
    /// tokens are).
    static func tokens(_ count: Int) throws -> [DeviceToken] {
        var random = SplitMix64(seed: 0x4845_5241_4C44)  // "HERALD"
        var tokens: [DeviceToken] = []
        tokens.reserveCapacity(count)
        for _ in 0..<count {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(32)
            for _ in 0..<4 { withUnsafeBytes(of: random.next()) { bytes.append(contentsOf: $0) } }
            tokens.append(try DeviceToken(bytes: bytes))
        }
        return tokens
    }

    private func makePayload() throws -> EncodedPayload {
        if payloadOptions.isGiven { return try payloadOptions.makePayload().payload }
        // About 100 bytes, like a typical alert.
        return try Payload(aps: APS(alert: .text("Herald benchmark: a short alert body of about one hundred bytes."))).encode()
    }
}

func format(_ value: Double) -> String {
    let rounded = (value * 100).rounded() / 100
    return String(rounded)
}

/// `count` notifications (HTTP/2 or legacy) made on demand, so a million of them cost no memory up front.
struct GeneratedSequence<Element>: Sequence, Sendable {
    let count: Int
    let make: @Sendable (Int) -> Element

    struct Iterator: IteratorProtocol {
        var index = 0
        let count: Int
        let make: @Sendable (Int) -> Element

        mutating func next() -> Element? {
            guard index < count else { return nil }
            defer { index += 1 }
            return make(index)
        }
    }

    func makeIterator() -> Iterator { Iterator(count: count, make: make) }
}
