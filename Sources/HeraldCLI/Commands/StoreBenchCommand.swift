import ArgumentParser
import HeraldCore
import HeraldGateway
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald bench store`: the store alone, no network: registering devices in bulk, then claiming
/// and completing a broadcast to all of them, as the gateway's workers do.
struct StoreBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Measure the device registry and the delivery queue, without sending.",
        discussion: """
            Registers --count devices with one streamed call, then queues a notification to all of \
            them and claims and completes it in batches of --batch with --workers workers, every \
            device accepted. Prints rows per second for each, CPU time and peak memory. Without \
            --database it uses a new SQLite file in a temporary directory.
            """
    )

    @Option(help: ArgumentHelp("The store: sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE.", valueName: "URL"))
    var database: String?

    @Option(help: "How many devices.")
    var count: Int = 1_000_000

    @Option(help: "Devices per claimed batch (default: the gateway's for the database, 5000 on SQLite, 10000 on PostgreSQL).")
    var batch: Int?

    @Option(help: "Workers claiming at once.")
    var workers: Int = 2

    @Option(help: "Output format: text or json.")
    var output: OutputFormat = .text

    func validate() throws {
        guard (1...100_000_000).contains(count) else { throw ValidationError("--count must be 1 to 100,000,000") }
        if let batch, !(1...50_000).contains(batch) { throw ValidationError("--batch must be 1 to 50,000") }
        guard (1...64).contains(workers) else { throw ValidationError("--workers must be 1 to 64") }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        var scratch: URL?
        let url: String
        if let database {
            url = database
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            scratch = directory
            url = "sqlite:" + directory.appendingPathComponent("store.db").path
        }
        defer { if let scratch { try? FileManager.default.removeItem(at: scratch) } }
        let configuration: HeraldStore.Configuration
        do {
            configuration = try HeraldStore.Configuration(url: url)
        } catch {
            throw CommandFailure.usage("--database: \(error.message)")
        }
        let count = self.count, batch = self.batch ?? WorkerSettings.defaultBatchSize(for: configuration.url), workers = self.workers
        let app = "bench-\(UUID().uuidString.prefix(8))"
        let before = ProcessStats.now()
        let (upsertSeconds, broadcastSeconds, delivered) = try await withHeraldStore(configuration: configuration) { store in
            let start = ContinuousClock.now
            let registered = try await store.register(contentsOf: GeneratedDevices(count: count), app: app)
            let upsert = ContinuousClock.now - start
            guard registered == count else { throw CommandFailure(status: 1, "registered \(registered) of \(count) devices") }

            let broadcastStart = ContinuousClock.now
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: Array(#"{"aps":{"alert":"Hi"}}"#.utf8)))
            let delivered = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        var sent = 0
                        while true {
                            let batches = try await store.claim(owner: "bench-\(worker)", limit: batch)
                            if batches.isEmpty { return sent }
                            for claimed in batches {
                                sent += claimed.items.count
                                try await store.complete(claimed, outcomes: claimed.items.map { DeliveryOutcome(token: $0.token, result: .accepted(receipt: nil)) })
                            }
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            let broadcast = ContinuousClock.now - broadcastStart
            let done = try await store.notification(id: queued.id)
            guard done?.status == .done, done?.counts.accepted == count else {
                throw CommandFailure(status: 1, "the broadcast ended \(done?.status.rawValue ?? "missing") with \(done?.counts.accepted ?? 0) of \(count) accepted")
            }
            return (upsert.seconds, broadcast.seconds, delivered)
        }
        let after = ProcessStats.now()
        let elapsed = upsertSeconds + broadcastSeconds
        switch output {
        case .text:
            Terminal.line("store       \(URLDescription(url))")
            Terminal.line("upsert      \(count) devices in \(format(upsertSeconds)) s: \(Int(Double(count) / upsertSeconds)) devices/s")
            Terminal.line("broadcast   \(delivered) claimed and completed in \(format(broadcastSeconds)) s: \(Int(Double(delivered) / broadcastSeconds)) devices/s (\(workers) workers, batches of \(batch))")
            after.printUsage(since: before, over: elapsed)
        case .json:
            var writer = JSONWriter(capacity: 256)
            writer.beginObject()
            writer.key("devices"); writer.int(count)
            writer.key("upsert_rate"); writer.double(Double(count) / upsertSeconds)
            writer.key("broadcast_rate"); writer.double(Double(delivered) / broadcastSeconds)
            after.writeUsage(since: before, into: &writer)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
    }

    /// The URL without its password.
    private func URLDescription(_ url: String) -> String {
        (try? StoreURL(url).description) ?? "?"
    }
}

/// Device registrations made one at a time as they are asked for: tokens from a counter spread by a
/// multiplicative hash, distinct and spread over the key ranges like real tokens.
struct GeneratedDevices: AsyncSequence, Sendable {
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        var number = 0

        mutating func next() async -> DeviceRegistration? {
            guard number < count else { return nil }
            defer { number += 1 }
            let mixed = UInt64(number) &* 0x9E37_79B9_7F4A_7C15
            let hex = String(mixed, radix: 16)
            return try! DeviceRegistration(token: String(repeating: "0", count: 16 - hex.count) + hex + String(repeating: "ab", count: 24))
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}
