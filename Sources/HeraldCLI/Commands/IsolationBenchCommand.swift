import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldAPNS
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// `herald bench isolation`: one app's push service down does not slow another app's sending,
/// and is not sent into. The whole gateway in this process on a temporary SQLite database, two
/// apps each with a mock APNs host of its own: app B broadcasts with app A's host healthy, then
/// again while A's host answers 503 to everything and A has a broadcast of its own queued.
struct IsolationBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "isolation",
        abstract: "Measure one app's broadcast while another app's APNs host is down.",
        discussion: """
            Starts two mock APNs servers (hosts A and B) and the gateway with apps "alpha" (to A) \
            and "bravo" (to B) on a new SQLite file, and imports --devices devices into each app. \
            Run 1: bravo broadcasts to its devices, A healthy. Run 2.0: A starts answering 503 \
            ServiceUnavailable to every request, alpha broadcasts to its devices and bravo at \
            once. Runs 2.1 on: once the gateway has backed A off and what it sent before is done, \
            bravo broadcasts again. Prints bravo's rates and the ratio of runs 2.1 on to run 1, \
            and the requests per second A received during them and over --steady-seconds after. \
            Then A recovers, and alpha's broadcast must end with every device accepted and none \
            failed.
            """
    )

    @Option(help: "Devices of each app.")
    var devices: Int = 50_000

    @Option(help: "Bravo's broadcasts in each state (the median is reported).")
    var rounds: Int = 1

    @Option(help: "How long to watch host A's requests after bravo's broadcast during the outage, in seconds.")
    var steadySeconds: Int = 30

    func validate() throws {
        guard (1...5_000_000).contains(devices) else { throw ValidationError("--devices must be 1 to 5,000,000") }
        guard (1...9).contains(rounds) else { throw ValidationError("--rounds must be 1 to 9") }
        guard (0...3600).contains(steadySeconds) else { throw ValidationError("--steady-seconds must be 0 to 3600") }
    }

    static let alpha = "alpha"
    static let bravo = "bravo"

    /// Device `index`'s token in `app`: 32 bytes that look random, as APNs's do.
    static func token(_ index: Int, app: String) -> String {
        var generator = SplitMix64(seed: UInt64(index) &+ (app == alpha ? 0xA11A : 0xB2A0) << 40)
        return (0..<4).map { _ in
            let hex = String(generator.next(), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-isolation-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        let key = ProviderKey.generate()
        // Each host a CA of its own name: trust stores find a CA by its name.
        var mocks: [String: MockAPNSServer] = [:]
        var roots: [String: [NIOSSLCertificate]] = [:]
        for app in [Self.alpha, Self.bravo] {
            let authority = try MockCertificateAuthority(name: "Herald bench isolation CA \(app)")
            var configuration = MockAPNSServer.Configuration()
            configuration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
            configuration.recordLimit = 0
            configuration.tlsIdentity = try authority.issueServerIdentity()
            let mock = try MockAPNSServer(configuration: configuration)
            try await mock.start()
            mocks[app] = mock
            roots[app] = [try authority.tlsCertificate]
        }
        let hostA = mocks[Self.alpha]!
        let hostB = mocks[Self.bravo]!

        let (apiKey, keyEntry) = APIKey.generate(name: "bench", apps: [Self.alpha, Self.bravo])
        let apps = [Self.alpha, Self.bravo].map { id in
            var app = GatewayConfiguration.App(id: id, topic: "com.example.\(id)", environment: mocks[id]!.environment, credentials: .providerToken(key))
            app.trustRoots = .only(roots[id]!)
            return app
        }
        let database = scratch.appendingPathComponent("herald.db").path
        var configuration = GatewayConfiguration(database: try StoreURL("sqlite:" + database), apps: apps, apiKeys: [keyEntry])
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        // The retries of alpha's devices come due within its broadcast's life.
        configuration.queue.maximumAge = .seconds(3600)

        // Warnings and worse: the host backed off, and nothing routine.
        let logger = Logger(label: "herald.bench") { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let listening = AsyncStream<ListenAddress>.makeStream()
        let gateway = try HeraldGateway(configuration: configuration, logger: logger) { address in listening.continuation.yield(address) }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: gateway.services().map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let stream = listening.stream
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask { [self] in
                defer { Task { await group.triggerGracefulShutdown() } }
                var addresses = stream.makeAsyncIterator()
                guard let address = await addresses.next() else { return }
                try await measure(BenchAPI(base: "http://\(address)", key: apiKey), hostA: hostA, hostB: hostB)
            }
            try await tasks.waitForAll()
        }
        try await hostA.shutdown()
        try await hostB.shutdown()
    }

    private func measure(_ api: BenchAPI, hostA: MockAPNSServer, hostB: MockAPNSServer) async throws {
        let clock = ContinuousClock()
        for app in [Self.alpha, Self.bravo] {
            var body = [UInt8]()
            body.reserveCapacity(devices * 80)
            for index in 0..<devices { body += Array(#"{"token":"\#(Self.token(index, app: app))"}"#.utf8) + [0x0A] }
            let imported = try await api.call("POST", "/v1/apps/\(app)/devices", body: body, contentType: "application/x-ndjson")
            guard imported["upserted"]?.intValue == devices else { throw CommandFailure(status: 1, "the import of \(app) registered \(imported.jsonString)") }
        }
        Terminal.line("herald bench isolation: \(devices) devices in each of two apps, SQLite, the gateway and both mock hosts in this process")

        var healthy: [Double] = []
        for round in 1...rounds {
            let (rate, _) = try await broadcast(api, app: Self.bravo, clock: clock)
            healthy.append(rate)
            Terminal.line("run 1.\(round)  bravo, host A healthy: \(Int(rate)) devices/s")
            Terminal.flush()
        }

        // Host A down: every request answered 503, and alpha's own broadcast queued; bravo's
        // broadcast at once, while the gateway has no answer from A yet (APNs's client tries each
        // notification up to five times, over about 12 s, before it reports a 503).
        hostA.updateScript { $0.randomFaults = MockScript.RandomFaults(rate: 1, seed: 7, faults: [.reject(.serviceUnavailable)]) }
        let outageStart = clock.now
        let requestsBefore = hostA.requestCount
        let alphaID = try await api.send(app: Self.alpha)
        async let opened = api.backedOff(app: Self.alpha, requests: { hostA.requestCount })
        let (first, firstSeconds) = try await broadcast(api, app: Self.bravo, clock: clock)
        Terminal.line(
            "run 2.0  bravo as host A goes down: \(Int(first)) devices/s; host A received \(hostA.requestCount - requestsBefore) requests in its \(String(format: "%.2f", firstSeconds)) s")
        Terminal.flush()
        // Until the gateway backs A off, and what it sent before that is done.
        guard let backedOffAt = try await opened else { throw CommandFailure(status: 1, "host A was not backed off within two minutes") }
        let backedOffAfter = backedOffAt.instant - outageStart
        let atBackOff = backedOffAt.requests - requestsBefore
        var quiet = clock.now
        var last = hostA.requestCount
        for _ in 0..<240 {
            try await Task.sleep(for: .milliseconds(500))
            let now = hostA.requestCount
            defer { last = now }
            quiet = clock.now
            if now - last <= 5 { break }
        }
        let burst = hostA.requestCount - requestsBefore
        Terminal.line(
            "outage      host A backed off \(String(format: "%.1f", backedOffAfter.seconds)) s in, after \(atBackOff) requests; "
                + "\(burst) in all by \(String(format: "%.1f", (quiet - outageStart).seconds)) s, when the sends under way before it had ended")
        Terminal.flush()

        var outage: [Double] = []
        var duringRates: [Double] = []
        for round in 1...rounds {
            let requests = hostA.requestCount
            let (rate, seconds) = try await broadcast(api, app: Self.bravo, clock: clock)
            let received = hostA.requestCount - requests
            outage.append(rate)
            duringRates.append(Double(received) / seconds)
            Terminal.line("run 2.\(round)  bravo, host A down: \(Int(rate)) devices/s; host A received \(received) requests in its \(String(format: "%.2f", seconds)) s")
            Terminal.flush()
        }
        let steadyRequests = hostA.requestCount
        let steadyStart = clock.now
        try await Task.sleep(for: .seconds(steadySeconds))
        let steady = Double(hostA.requestCount - steadyRequests) / max((clock.now - steadyStart).seconds, 0.001)
        let alphaDuring = try await api.call("GET", "/v1/notifications/\(alphaID)")

        let before = Self.median(healthy)
        let during = Self.median(outage)
        Terminal.line("bravo       \(Int(before)) devices/s healthy, \(Int(during)) with host A down: ratio \(String(format: "%.3f", during / before)) (target ≥ 0.90)")
        Terminal.line(
            "host A      \(String(format: "%.1f", Self.median(duringRates))) requests/s during bravo's broadcast; \(String(format: "%.2f", steady)) requests/s over the \(steadySeconds) s after"
        )
        Terminal.line(
            "alpha       during the outage: \(alphaDuring["pending"]?.intValue ?? -1) pending, \(alphaDuring["failed"]?.intValue ?? -1) failed, \(alphaDuring["accepted"]?.intValue ?? -1) accepted")
        Terminal.flush()

        // Host A recovers: alpha's broadcast must end whole, nothing failed.
        hostA.updateScript { $0 = MockScript() }
        let recovered = clock.now
        let done = try await api.waitUntilDone(alphaID, clock: clock)
        let accepted = done["accepted"]?.intValue ?? -1
        let failed = done["failed"]?.intValue ?? -1
        Terminal.line("recovery    alpha done \(String(format: "%.1f", (clock.now - recovered).seconds)) s after host A recovered: \(accepted) accepted, \(failed) failed")
        Terminal.flush()
        guard accepted == devices, failed == 0 else { throw CommandFailure(status: 1, "alpha's broadcast ended with \(accepted) accepted and \(failed) failed") }
    }

    /// One broadcast to every device of `app`, from its POST to done: devices per second and seconds.
    private func broadcast(_ api: BenchAPI, app: String, clock: ContinuousClock) async throws -> (Double, Double) {
        let start = clock.now
        let id = try await api.send(app: app)
        let done = try await api.waitUntilDone(id, clock: clock)
        let seconds = (clock.now - start).seconds
        guard done["accepted"]?.intValue == devices else { throw CommandFailure(status: 1, "\(app)'s broadcast ended \(done.jsonString)") }
        return (Double(devices) / seconds, seconds)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

/// The gateway's HTTP API as the benchmark calls it, with its key.
private struct BenchAPI {
    let base: String
    let key: String

    /// A broadcast to every device of `app`; its ID.
    func send(app: String) async throws -> String {
        let body = #"{"to":{"all":true},"payload":{"aps":{"alert":"Herald benchmark: a short alert body of about one hundred bytes."}}}"#
        let queued = try await call("POST", "/v1/apps/\(app)/notifications", body: Array(body.utf8))
        guard let id = queued["id"]?.stringValue else { throw CommandFailure(status: 1, "no notification ID in \(queued.jsonString)") }
        return id
    }

    /// Waits (at most an hour, 20 looks a second) until the notification is done.
    func waitUntilDone(_ id: String, clock: ContinuousClock) async throws -> JSONValue {
        for _ in 0..<72_000 {
            let status = try await call("GET", "/v1/notifications/\(id)")
            if status["status"]?.stringValue == "done" { return status }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CommandFailure(status: 1, "notification \(id) was not done within an hour")
    }

    /// When `app`'s host was first backed off (`herald_push_host_backoffs_total`), and the
    /// requests its mock had had by then; looked for every 100 ms for two minutes.
    func backedOff(app: String, requests: @Sendable () -> Int) async throws -> (instant: ContinuousClock.Instant, requests: Int)? {
        for _ in 0..<1200 {
            let metrics = try await self.metrics()
            if metrics.split(separator: "\n").contains(where: { $0.hasPrefix("herald_push_host_backoffs_total{") && $0.contains(#"app="\#(app)""#) }) {
                return (.now, requests())
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// `/metrics` as text.
    func metrics() async throws -> String {
        String(decoding: try await fetch("GET", "/metrics", body: nil, contentType: "").data, as: UTF8.self)
    }

    func call(_ method: String, _ path: String, body: [UInt8]? = nil, contentType: String = "application/json") async throws -> JSONValue {
        let (status, data) = try await fetch(method, path, body: body, contentType: contentType)
        let value = (try? JSONValue(parsing: data)) ?? .null
        guard (200..<300).contains(status) else {
            throw CommandFailure(status: 1, "\(method) \(path) answered \(status): \(PeerText(String(decoding: data.prefix(200), as: UTF8.self), limit: 200))")
        }
        return value
    }

    private func fetch(_ method: String, _ path: String, body: [UInt8]?, contentType: String) async throws -> (status: Int, data: [UInt8]) {
        var request = HTTPClientRequest(url: base + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        // A keep-alive connection the gateway closed as idle (after 30 s) fails the request that
        // took it: tried again, on a new one.
        for attempt in 1...3 {
            do {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
                var collected = try await response.body.collect(upTo: 16 << 20)
                return (Int(response.status.code), collected.readBytes(length: collected.readableBytes) ?? [])
            } catch where attempt < 3 && method == "GET" {
                continue
            }
        }
        throw CommandFailure(status: 1, "\(method) \(path) failed three times")
    }
}
