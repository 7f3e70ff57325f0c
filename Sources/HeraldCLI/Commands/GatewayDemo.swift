import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle


/// `herald demo --gateway`: the whole gateway in this process, on a temporary SQLite database,
/// sending to the bundled mock APNs, driven through its HTTP API as a backend would drive it.
///
/// It imports devices with users and tags, sends to a user, a tag and everyone, shows each
/// notification's progress and outcome (the mock refuses some tokens, and the gateway retires
/// them), then prints the console's URL with a ready API key and serves until Ctrl-C (or stops,
/// with `--exit`). Exits non-zero when an outcome is not the one the mock was scripted to give.
struct GatewayDemo {
    let devices: Int
    let port: Int
    let exitAfterRun: Bool

    static let app = "demo"
    static let topic = "com.example.herald.demo"

    /// Device `index`'s token: 32 bytes that look random, as APNs's do.
    static func token(_ index: Int) -> String {
        var generator = SplitMix64(seed: UInt64(index) &+ 0x5EED)
        return (0..<4).map { _ in String(generator.next(), radix: 16).leftPadded(to: 16) }.joined()
    }

    /// Every 200th device uninstalls the app after the import (APNs then answers 410
    /// Unregistered); every 1000th, offset by 7, has a token APNs calls bad. Tag `beta` is every 10th device; each user has two.
    static func isUnregistered(_ index: Int) -> Bool { index % 200 == 0 }
    static func isBad(_ index: Int) -> Bool { index % 1000 == 7 }
    static func isBeta(_ index: Int) -> Bool { index % 10 == 0 }
    static let languages = ["en", "fr", "de"]

    func run() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        let key = ProviderKey.generate()
        var mockConfiguration = MockAPNSServer.Configuration()
        mockConfiguration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
        mockConfiguration.recordLimit = 0
        for index in 0..<devices where Self.isBad(index) { mockConfiguration.script.fail(Self.token(index), with: .reject(.badDeviceToken)) }
        let mock = try MockAPNSServer(configuration: mockConfiguration)
        try await mock.start()

        let (apiKey, keyEntry) = APIKey.generate(name: "demo", apps: [Self.app])
        var app = GatewayConfiguration.App(id: Self.app, topic: Self.topic, environment: mock.environment, credentials: .providerToken(key))
        app.trustRoots = .only(mock.trustRoots)
        let database = scratch.appendingPathComponent("herald.db").path
        var configuration = GatewayConfiguration(database: try StoreURL("sqlite:" + database), apps: [app], apiKeys: [keyEntry])
        configuration.listen = ListenAddress(host: "127.0.0.1", port: port)

        // The gateway's own log: warnings and worse only, so the demo's lines stay readable.
        let logger = Logger(label: "herald.demo") { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let listening = AsyncStream<ListenAddress>.makeStream()
        let gateway = try HeraldGateway(configuration: configuration, logger: logger) { address in listening.continuation.yield(address) }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: gateway.services().map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
            )
        )

        Terminal.line("herald demo --gateway: the whole gateway in one process")
        Terminal.line("  database  \(database) (temporary SQLite)")
        Terminal.line("  APNs      the bundled mock at \(mock.url) (TLS + HTTP/2, token auth)")
        Terminal.flush()

        let stream = listening.stream
        let problems = try await withThrowingTaskGroup(of: [String].self) { tasks in
            tasks.addTask {
                try await group.run()
                return []
            }
            tasks.addTask { [self] in
                var addresses = stream.makeAsyncIterator()
                guard let address = await addresses.next() else { return [] }
                var problems: [String]
                do {
                    problems = try await script(DemoAPI(base: "http://\(address)", key: apiKey), mock: mock)
                } catch {
                    problems = ["\(error)"]
                }
                if problems.isEmpty { Terminal.line("every notification got its expected outcome") }
                if exitAfterRun || !problems.isEmpty {
                    await group.triggerGracefulShutdown()
                    return problems
                }
                Terminal.line("")
                Terminal.line("console     http://\(address)/console")
                Terminal.line("API key     \(apiKey)   (this demo's own, for its temporary database; paste it into the console)")
                Terminal.line("            curl -H 'Authorization: Bearer \(apiKey)' http://\(address)/v1/apps/\(Self.app)/summary")
                Terminal.line("serving until Ctrl-C")
                Terminal.flush()
                return []
            }
            var all: [String] = []
            for try await problems in tasks { all += problems }
            return all
        }
        try await mock.shutdown()
        if problems.isEmpty {
            if !exitAfterRun { Terminal.line("herald demo stopped") }
            Terminal.flush()
        } else {
            for line in problems.prefix(20) { Terminal.error(line) }
            throw ExitCode(1)
        }
    }

    /// Imports, sends, follows; returns what did not turn out as scripted.
    private func script(_ api: DemoAPI, mock: MockAPNSServer) async throws -> [String] {
        var problems: [String] = []
        let clock = ContinuousClock()

        let indices = 0..<devices
        // 1. Import, as one NDJSON request.
        var body = [UInt8]()
        body.reserveCapacity(devices * 140)
        for index in 0..<devices {
            let tags = ["lang:" + Self.languages[index % Self.languages.count]] + (Self.isBeta(index) ? ["beta"] : [])
            let line = #"{"token":"\#(Self.token(index))","user":"user-\#(index / 2)","tags":[\#(tags.map { "\"\($0)\"" }.joined(separator: ","))]}"#
            body += Array(line.utf8)
            body.append(0x0A)
        }
        let importStart = clock.now
        let imported = try await api.call("POST", "/v1/apps/\(Self.app)/devices", body: body, contentType: "application/x-ndjson")
        let importSeconds = (clock.now - importStart).seconds
        let upserted = imported["upserted"]?.intValue ?? -1
        Terminal.line("imported    \(upserted) devices with users and tags in \(format(importSeconds)) s (\(Int(Double(upserted) / max(importSeconds, 0.001)))/s), one NDJSON request")
        if upserted != devices { problems.append("the import registered \(upserted) devices, not \(devices)") }
        // Then some users uninstall the app: APNs answers 410 Unregistered for their tokens, with
        // a time after they registered, so the gateway retires them (apns-spec §1.7, 410 Unregistered: resume only after a newer registration).
        let uninstalled = Date()
        mock.updateScript { script in
            for index in 0..<devices where Self.isUnregistered(index) { script.unregister(Self.token(index), since: uninstalled) }
        }
        Terminal.line("meanwhile   \(indices.filter(Self.isUnregistered).count) devices uninstalled the app (the mock now answers 410 for them)")

        // 2. A user, a tag, everyone: each followed to its end.
        let user = 21
        let userDevices = [2 * user, 2 * user + 1].filter { $0 < devices }
        // Each send, and the devices it should reach.
        let sends: [(label: String, to: String, expected: [Int])] = [
            ("to user-\(user)", #"{"users":["user-\#(user)"]}"#, userDevices),
            ("to tag beta", #"{"tags":["beta"]}"#, indices.filter(Self.isBeta)),
            // Everyone still active: the beta devices Apple said were gone are retired by now.
            ("to everyone", #"{"all":true}"#, indices.filter { !(Self.isBeta($0) && Self.isUnregistered($0)) }),
        ]
        for send in sends {
            let payload = #"{"to":\#(send.to),"payload":{"aps":{"alert":{"title":"Herald demo","body":"Sent \#(send.label)"}}}}"#
            let start = clock.now
            let queued = try await api.call("POST", "/v1/apps/\(Self.app)/notifications", body: Array(payload.utf8))
            guard let id = queued["id"]?.stringValue else {
                problems.append("\(send.label): no notification ID in \(queued.jsonString)")
                continue
            }
            let targeted = queued["targeted"]?.intValue ?? 0
            let progress = ProgressBar(total: max(targeted, 1), label: send.label)
            var status: JSONValue = queued
            // Bounded: ten minutes at four looks a second.
            for _ in 0..<2400 {
                status = try await api.call("GET", "/v1/notifications/\(id)")
                let ended = (status["accepted"]?.intValue ?? 0) + (status["failed"]?.intValue ?? 0)
                    + (status["rejected"]?.objectValue?.values.compactMap(\.intValue).reduce(0, +) ?? 0)
                progress.set(ended)
                if status["status"]?.stringValue == "done" { break }
                try await Task.sleep(for: .milliseconds(250))
            }
            progress.finish()
            let seconds = (clock.now - start).seconds
            let accepted = status["accepted"]?.intValue ?? 0
            let rejected = (status["rejected"]?.objectValue ?? [:]).compactMapValues(\.intValue)
            let failed = status["failed"]?.intValue ?? 0
            let reasons = rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            Terminal.line(
                "\(send.label.padding(toLength: 12, withPad: " ", startingAt: 0))\(status["status"]?.stringValue ?? "?"): \(targeted) targeted, \(accepted) accepted"
                    + (rejected.isEmpty ? "" : ", rejected \(reasons)") + (failed > 0 ? ", \(failed) failed" : "")
                    + " in \(format(seconds)) s" + (targeted >= 1000 ? " (\(Int(Double(targeted) / max(seconds, 0.001)))/s)" : "")
            )
            Terminal.flush()
            let expected = send.expected
            let want = (
                targeted: expected.count, accepted: expected.filter { !Self.isUnregistered($0) && !Self.isBad($0) }.count,
                unregistered: expected.filter(Self.isUnregistered).count, bad: expected.filter(Self.isBad).count
            )
            let got = (targeted: targeted, accepted: accepted, unregistered: rejected["Unregistered"] ?? 0, bad: rejected["BadDeviceToken"] ?? 0)
            if status["status"]?.stringValue != "done" || got != want || failed != 0 {
                problems.append("\(send.label): expected \(want) and none failed, got \(got) with \(failed) failed, status \(status["status"]?.stringValue ?? "?")")
            }
        }

        // 3. What the gateway learnt: tokens Apple called gone or bad are no longer active.
        let summary = try await api.call("GET", "/v1/apps/\(Self.app)/summary")
        let byStatus = summary["devices"]?["byStatus"]
        let active = byStatus?["active"]?.intValue ?? -1
        let unregistered = byStatus?["unregistered"]?.intValue ?? -1
        let invalid = byStatus?["invalid"]?.intValue ?? -1
        Terminal.line("devices     \(active) active, \(unregistered) unregistered (Apple said gone), \(invalid) invalid (Apple said bad)")
        let wantUnregistered = indices.filter(Self.isUnregistered).count
        let wantInvalid = indices.filter(Self.isBad).count
        if (active, unregistered, invalid) != (devices - wantUnregistered - wantInvalid, wantUnregistered, wantInvalid) {
            problems.append("devices: expected \(devices - wantUnregistered - wantInvalid) active, \(wantUnregistered) unregistered, \(wantInvalid) invalid")
        }
        return problems
    }

}

/// The gateway's HTTP API as the demo calls it, with its key.
private struct DemoAPI {
    let base: String
    let key: String

    /// The most of an answer read: the demo's answers are a few KB.
    static let maximumAnswer = 4 << 20

    /// One call through AsyncHTTPClient (not URLSession: Foundation's networking would link
    /// libcurl into `herald`, a library a server would need for the demo alone).
    func call(_ method: String, _ path: String, body: [UInt8]? = nil, contentType: String = "application/json") async throws -> JSONValue {
        var request = HTTPClientRequest(url: base + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        let status = Int(response.status.code)
        var collected = try await response.body.collect(upTo: Self.maximumAnswer)
        let data = collected.readBytes(length: collected.readableBytes) ?? []
        let value = (try? JSONValue(parsing: data)) ?? .null
        guard (200..<300).contains(status) else {
            throw CommandFailure(status: 1, "\(method) \(path) answered \(status): \(value["error"]?["message"]?.stringValue ?? PeerText(String(decoding: data.prefix(200), as: UTF8.self), limit: 200).description)")
        }
        return value
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
