import HeraldAPNS
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The workers of one gateway process: each claims devices from the store under a lease, sends
/// to them through its app's ``APNSClient``, and records how each ended (which feeds pruning).
///
/// On graceful shutdown they stop claiming and finish what is in flight; what has no answer
/// after ``stopGrace`` is given back to the queue as a retry. A worker that is killed loses
/// nothing: its leases run out and another worker sends what it held.
final class DeliveryWorkers: Service, Sendable {
    let store: HeraldStore
    /// The apps and clients in force (a reload replaces them between batches).
    let live: LiveConfiguration
    let metrics: GatewayMetrics
    let logger: Logger
    /// Names this process's workers in the store's leases.
    let processTag: String
    /// After a graceful shutdown begins, how long a batch in flight may take to finish.
    let stopGrace: Duration
    /// The push-service hosts that keep failing, backed off per app and platform: kept across
    /// reloads (docs/gateway.md, "Isolation").
    let circuits: HostCircuits
    /// Each app's receipt keys, which sign its deliveries' receipts.
    let receiptKeys: ReceiptKeyring

    init(
        store: HeraldStore, live: LiveConfiguration, metrics: GatewayMetrics, logger: Logger, stopGrace: Duration = .seconds(20),
        receiptKeys: ReceiptKeyring? = nil
    ) {
        self.store = store
        self.live = live
        workers = live.configuration.workers
        batchSize = live.configuration.workers.batchSize(on: live.configuration.database)
        queue = live.configuration.queue
        self.metrics = metrics
        self.logger = logger
        self.stopGrace = stopGrace
        // The API's, when it runs in this process: a rotation there signs here at once.
        self.receiptKeys = receiptKeys ?? ReceiptKeyring(store: store)
        // A host that answers again: the devices held for it go at once, in every process.
        // And again 5 and 30 s later: a batch in flight when the circuit closed records the
        // devices it held after the first wake, and they would wait out `heldFor` (10 minutes).
        circuits = HostCircuits(logger: logger, metrics: metrics, closed: { [store, logger] key in
            Task {
                for delay in Self.wakeDelays {
                    if delay > .zero { try? await Task.sleep(for: delay) }
                    do {
                        try await store.wakeHeld(app: key.app, platform: key.platform, reason: .gateway(.hostBackedOff))
                    } catch {
                        logger.warning(
                            "cannot make the devices held for a push service host due; they come when their wait ends",
                            metadata: ["app": "\(key.app)", "platform": "\(key.platform.rawValue)", "error": "\(error)"])
                    }
                }
            }
        })
        processTag = "\(Self.hostName())-\(getpid())-\(UInt32.random(in: 0 ... .max))"
    }

    /// The workers' and queue's settings, read once: a reload does not change them.
    let workers: WorkerSettings
    /// Devices a claim takes (``WorkerSettings/batchSize(on:)``).
    let batchSize: Int
    let queue: QueueSettings

    func run() async throws {
        await withDiscardingTaskGroup { group in
            for index in 0..<max(1, workers.count) {
                group.addTask { await self.work(index: index) }
            }
        }
        logger.info("workers stopped")
    }

    /// One worker's loop, until graceful shutdown or cancellation.
    private func work(index: Int) async {
        let owner = "\(processTag)-\(index)"
        // Worker 0 takes only single deliveries, so a notification to a few tokens never
        // waits behind a broadcast's ranges.
        let includeRanges = index != 0 || workers.count == 1
        var failures = 0
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let batches: [WorkBatch]
            do {
                batches = try await store.claim(owner: owner, limit: batchSize, includeRanges: includeRanges)
                if failures > 0 { logger.info("the store answers again; claiming", metadata: ["worker": "\(index)"]) }
                failures = 0
            } catch {
                failures += 1
                if failures == 1 { logger.warning("cannot claim work; pausing", metadata: ["worker": "\(index)", "error": "\(error)"]) }
                // 0.1 s, doubling to 5 s: a database restart is noticed within seconds.
                await Self.pause(.milliseconds(min(5000, 100 << min(failures - 1, 6))))
                continue
            }
            if batches.isEmpty {
                await waitForWork()
                continue
            }
            await deliver(batches, worker: index)
        }
    }

    /// How many of one claim's batches (one per notification) a worker sends at once. A claim
    /// of single deliveries can hold hundreds of notifications to one device each; sent one
    /// after another, each waiting for APNs's answer and its own commit, they would queue
    /// behind each other (at 200 a second, for seconds).
    static let batchesInFlight = 32

    private func deliver(_ batches: [WorkBatch], worker: Int) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for batch in batches {
                if Task.isShuttingDownGracefully || Task.isCancelled {
                    try? await store.release(batch)
                    continue
                }
                if running == Self.batchesInFlight {
                    await group.next()
                    running -= 1
                }
                running += 1
                group.addTask { await self.deliver(batch, worker: worker) }
            }
        }
    }

    /// Sends one batch and records its outcomes.
    /// When the devices held for a host are made due after its circuit closes: at once, then
    /// again for those a batch still in flight held after.
    static let wakeDelays: [Duration] = [.zero, .seconds(5), .seconds(30)]

    /// The key `app`'s receipts are signed with: its newest. Without one (the store cannot be
    /// read), its devices are sent without receipts rather than not at all.
    private func receiptKey(of app: GatewayConfiguration.App, logger: Logger) async -> ReceiptKey? {
        guard app.receipts.enabled else { return nil }
        do {
            return try await receiptKeys.keys(app: app.id).signing
        } catch {
            logger.warning("cannot read the app's receipt keys; sending without receipts", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func deliver(_ batch: WorkBatch, worker: Int) async {
        // The apps in force when the batch starts; a reload meanwhile leaves this batch the
        // clients it took, which close once it and the others that took them are done.
        let snapshot = live.snapshot
        await deliver(batch, worker: worker, configuration: snapshot.configuration, clients: snapshot.clients)
    }

    private func deliver(_ batch: WorkBatch, worker: Int, configuration: GatewayConfiguration, clients: GatewayClients) async {
        let start = ContinuousClock.now
        let queued = batch.notification
        var logger = self.logger
        logger[metadataKey: "notification"] = "\(queued.id)"
        logger[metadataKey: "app"] = "\(queued.app)"
        guard let app = configuration.app(queued.app) else {
            // Not this process's app (a configuration changed): retried until it expires, so a
            // process that has the app, or this one restarted with it, still sends it.
            logger.warning("a notification for an app this gateway does not serve; retrying later", metadata: ["devices": "\(batch.items.count)"])
            await record(batch, batch.items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .gateway(.unknownApp))) }, logger: logger, start: start)
            return
        }
        // The lease is renewed while the batch is sent; once the process is stopping, the batch
        // has its grace period, then the outcomes not in are retried, whatever their platform.
        let grace = GracePeriod()
        let watchdog = Task { await self.watch(batch, grace: grace) }
        defer { watchdog.cancel() }
        circuits.forgetGoneApps { configuration.app($0) != nil }
        // Screened and rendered once, whatever the platforms: skipped devices end here.
        let prepared: BatchPreparation
        do {
            prepared = try await BatchPreparation.prepare(batch, app: app, store: store, logger: logger)
        } catch {
            logger.warning("cannot screen a batch; retrying it later", metadata: ["devices": "\(batch.items.count)", "error": "\(error)"])
            await record(batch, batch.items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .gateway(.storeUnavailable))) }, logger: logger, start: start)
            return
        }
        let receiptKey = await receiptKey(of: app, logger: logger)
        var outcomes = prepared.outcomes
        if prepared.parts.count == 1, let part = prepared.parts.first {
            outcomes += await Self.outcomes(
                of: part, grace: grace, circuits: circuits,
                part: { devices, collector in DeliveryPart(batch: devices, app: app, store: store, logger: logger, outcomes: collector, receiptKey: receiptKey) },
                delivery: { clients.delivery(for: $0, app: app) })
        } else if !prepared.parts.isEmpty {
            // One part per rendering, sent at once.
            let (circuits, store, logger) = (self.circuits, self.store, logger)
            outcomes += await withTaskGroup(of: [DeliveryOutcome].self) { group in
                for part in prepared.parts {
                    group.addTask {
                        await Self.outcomes(
                            of: part, grace: grace, circuits: circuits,
                            part: { devices, collector in DeliveryPart(batch: devices, app: app, store: store, logger: logger, outcomes: collector, receiptKey: receiptKey) },
                            delivery: { clients.delivery(for: $0, app: app) })
                    }
                }
                var all: [DeliveryOutcome] = []
                for await outcomes in group { all += outcomes }
                return all
            }
        }
        await record(batch, outcomes, logger: logger, start: start)
    }

    /// Every device's outcome for `batch`, a part per platform in ``DevicePlatform/allCases``'s
    /// order: each part is sent through its platform's delivery, all at once. An outcome that is
    /// not in when `grace` ends, or when its delivery returns without it, is a `shutdown` retry;
    /// a delivery still sending then is left to finish on its own, and its late outcomes are dropped.
    /// With `circuits`, each part goes through ``HostIsolation``: a push-service host backed off
    /// is not sent to, its devices retried when it is next tried.
    static func outcomes(
        of batch: WorkBatch, grace: GracePeriod, circuits: HostCircuits? = nil, part: (WorkBatch, OutcomeCollector) -> DeliveryPart,
        delivery: (DevicePlatform) -> any PlatformDelivery
    ) async -> [DeliveryOutcome] {
        var collectors: [OutcomeCollector] = []
        for (platform, devices) in DevicePlatform.parts(of: batch) {
            let collector = OutcomeCollector(tokens: devices.items.map(\.token), missing: .retry(reason: .gateway(.shutdown)))
            grace.watch(collector)
            collectors.append(collector)
            let part = part(devices, collector)
            let delivery = delivery(platform)
            Task {
                if let circuits {
                    await HostIsolation(circuits: circuits, platform: platform).send(part, through: delivery)
                } else {
                    await delivery.send(part)
                }
                collector.stop()
            }
        }
        var outcomes: [DeliveryOutcome] = []
        for collector in collectors {
            await collector.wait()
            if outcomes.isEmpty { outcomes = collector.take() } else { outcomes += collector.take() }
        }
        return outcomes
    }

    /// Renews `batch`'s lease while it is sent; once the process is stopping, gives the batch its
    /// grace period, then ends `grace`: its outcomes not in yet are no longer waited for.
    private func watch(_ batch: WorkBatch, grace: GracePeriod) async {
        let lease = queue.lease
        let stopGrace = self.stopGrace
        let store = self.store
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: lease / 3)
                    if Task.isCancelled { return }
                    try? await store.renew(batch)
                }
            }
            group.addTask {
                try? await gracefulShutdown()
                if Task.isCancelled { return }
                try? await Task.sleep(for: stopGrace)
                if !Task.isCancelled { grace.end() }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Completes a batch; a database that does not answer is retried while the lease lasts (after
    /// that the devices are another worker's to send again).
    private func record(_ batch: WorkBatch, _ outcomes: [DeliveryOutcome], logger: Logger, start: ContinuousClock.Instant) async {
        let giveUp = ContinuousClock.now + queue.lease
        var attempt = 0
        while true {
            do {
                try await store.complete(batch, outcomes: outcomes)
                break
            } catch let error as StoreError where error.code == .leaseLost {
                logger.info("the lease ran out before the outcomes were recorded; the new holder counts them", metadata: ["devices": "\(outcomes.count)"])
                break
            } catch {
                attempt += 1
                if ContinuousClock.now > giveUp || Task.isCancelled {
                    logger.error(
                        "outcomes not recorded; the devices go back to the queue when the lease runs out",
                        metadata: ["devices": "\(outcomes.count)", "error": "\(error)"]
                    )
                    break
                }
                if attempt == 1 { logger.warning("cannot record outcomes; retrying", metadata: ["error": "\(error)"]) }
                await Self.pause(.milliseconds(min(2000, 100 << min(attempt - 1, 5))), evenWhenStopping: true)
            }
        }
        let elapsed = ContinuousClock.now - start
        let platforms = !batch.items.contains { $0.platform != .apns }
            ? [:] : Dictionary(batch.items.map { ($0.token, $0.platform) }, uniquingKeysWith: { first, _ in first })
        metrics.recordOutcomes(app: batch.notification.app, outcomes, platforms: platforms, duration: elapsed)
        if logger.logLevel <= .debug {
            for outcome in outcomes {
                switch outcome.result {
                case .accepted: continue
                case .skipped(let reason):
                    logger.debug("device outcome", metadata: ["token": "\(outcome.token)", "outcome": "\(reason.rawValue)"])
                case .rejected(let reason, _), .failed(let reason), .retry(let reason, _):
                    logger.debug("device outcome", metadata: ["token": "\(outcome.token)", "outcome": "\(outcome.result)", "reason": "\(reason)"])
                }
            }
        }
        // Counted only when it is logged: a dictionary update per device costs more than recording it.
        if logger.logLevel <= .info {
            var counts: [String: Int] = [:]
            for outcome in outcomes {
                switch outcome.result {
                case .accepted: counts["accepted", default: 0] += 1
                case .rejected: counts["rejected", default: 0] += 1
                case .retry: counts["retry", default: 0] += 1
                case .failed: counts["failed", default: 0] += 1
                case .skipped: counts["skipped", default: 0] += 1
                }
            }
            logger.info(
                "batch sent",
                metadata: [
                    "devices": "\(outcomes.count)", "accepted": "\(counts["accepted", default: 0])", "rejected": "\(counts["rejected", default: 0])",
                    "retry": "\(counts["retry", default: 0])", "failed": "\(counts["failed", default: 0])",
                    "skipped": "\(counts["skipped", default: 0])", "resend": "\(batch.isResend)",
                    "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
                ]
            )
        }
    }

    /// Waits for new work (or a retry coming due), at most a second, and not past a graceful shutdown.
    private func waitForWork() async {
        await Self.cancelWhenGracefulShutdownIgnoringErrors {
            await self.store.waitForWork(timeout: .seconds(1))
        }
    }

    private static func pause(_ duration: Duration, evenWhenStopping: Bool = false) async {
        if evenWhenStopping {
            try? await Task.sleep(for: duration)
        } else {
            await cancelWhenGracefulShutdownIgnoringErrors { try? await Task.sleep(for: duration) }
        }
    }

    private static func cancelWhenGracefulShutdownIgnoringErrors(_ body: @escaping @Sendable () async -> Void) async {
        await cancelWhenGracefulShutdown { await body() }
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An app's APNs client for the devices of one token environment.
struct AppEnvironment: Hashable, Sendable {
    var app: String
    var environment: TokenEnvironment
    /// A token kind with a credential of its own (``GatewayConfiguration/App/credentialsByKind``);
    /// `nil`: the app's credential, which serves every other kind.
    var kind: TokenKind? = nil
}
