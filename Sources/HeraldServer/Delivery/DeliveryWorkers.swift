import HeraldClient
import HeraldCore
import HeraldFCM
import HeraldStore
import HeraldWebPush
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

    init(store: HeraldStore, live: LiveConfiguration, metrics: GatewayMetrics, logger: Logger, stopGrace: Duration = .seconds(20)) {
        self.store = store
        self.live = live
        workers = live.configuration.workers
        batchSize = live.configuration.workers.batchSize(on: live.configuration.database)
        queue = live.configuration.queue
        self.metrics = metrics
        self.logger = logger
        self.stopGrace = stopGrace
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
    private func deliver(_ batch: WorkBatch, worker: Int) async {
        // The apps and clients in force when the batch starts; a reload meanwhile leaves this
        // batch its clients, which close once it and the others that took them are done.
        let snapshot = live.snapshot
        await snapshot.clients.using {
            await deliver(batch, worker: worker, configuration: snapshot.configuration, generation: snapshot.clients)
        }
    }

    private func deliver(_ whole: WorkBatch, worker: Int, configuration: GatewayConfiguration, generation: ClientGeneration) async {
        let clients = generation.clients
        // Browsers (Web Push subscriptions) and Android devices (FCM) go through the app's Web
        // Push and FCM clients, beside the APNs devices; most batches have neither.
        var batch = whole
        var browserItems: [WorkItem] = []
        var androidItems: [WorkItem] = []
        if whole.items.contains(where: { DevicePlatform(deviceID: $0.token) != .apns }) {
            batch.items = []
            for item in whole.items {
                switch DevicePlatform(deviceID: item.token) {
                case .apns: batch.items.append(item)
                case .webpush: browserItems.append(item)
                case .fcm: androidItems.append(item)
                }
            }
        }
        let start = ContinuousClock.now
        let queued = batch.notification
        var logger = self.logger
        logger[metadataKey: "notification"] = "\(queued.id)"
        logger[metadataKey: "app"] = "\(queued.app)"
        guard let app = configuration.app(queued.app) else {
            // Not this process's app (a configuration changed): retried until it expires, so a
            // process that has the app, or this one restarted with it, still sends it.
            logger.warning("a notification for an app this gateway does not serve; retrying later", metadata: ["devices": "\(whole.items.count)"])
            await record(whole, whole.items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .gateway(.unknownApp))) }, logger: logger, start: start)
            return
        }
        // The lease is renewed while the batch is sent; once the process is stopping, the batch
        // has its grace period, then outcomes not in are retried (its APNs devices', browsers' and
        // Android devices').
        let grace = GracePeriod()
        let watchdog = Task { await self.watch(whole, grace: grace) }
        defer { watchdog.cancel() }
        let browsers = OtherSends(items: browserItems, grace: grace) { [logger, browserItems] in
            await self.sendToBrowsers(browserItems, of: whole, app: app, client: generation.webPushClients[app.id], logger: logger)
        }
        let android = OtherSends(items: androidItems, grace: grace) { [logger, androidItems] in
            await self.sendToAndroid(androidItems, of: whole, app: app, client: generation.fcmClients[app.id], logger: logger)
        }
        // An app that reaches browsers only (no APNs credentials, or not any more): its APNs
        // devices cannot be sent to.
        guard let topic = app.apnsTopic else {
            let browserOutcomes = await browsers.outcomes() + android.outcomes()
            await record(
                whole, batch.items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.apnsNotConfigured))) } + browserOutcomes,
                logger: logger, start: start)
            return
        }
        let messages: BatchNotifications
        do {
            messages = try BatchNotifications(for: batch, topic: topic)
        } catch {
            let browserOutcomes = await browsers.outcomes() + android.outcomes()
            await record(
                whole, batch.items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.payloadInvalid))) } + browserOutcomes, logger: logger,
                start: start)
            return
        }
        // Each device goes to its own environment's client (most batches: all to one).
        // The items that have a notification (a token that is not hex has none), in its order.
        let invalid = Set(messages.invalid)
        let sent = invalid.isEmpty ? batch.items : batch.items.filter { !invalid.contains($0.token) }
        // The batch's own token strings, in the notifications' order, not each token encoded to
        // hex again: the store matches outcomes to rows by them.
        let collector = OutcomeCollector(tokens: sent.map(\.token), missing: .retry(reason: .gateway(.shutdown)))
        grace.watch(collector)
        let groups = BatchMessages.groups(of: sent, defaultEnvironment: app.defaultEnvironment)
        let appID = app.id
        // The kind's own credential's clients, if it has one (a VoIP certificate).
        let kind = TokenKind(for: queued.pushType).flatMap { app.credentialsByKind[$0] == nil ? nil : $0 }
        let keepsIDs = whole.keepsAcceptanceIDs
        let sender = Task { [logger] in
            await withTaskGroup(of: Void.self) { senders in
                for (environment, indices) in groups {
                    guard let client = clients[AppEnvironment(app: appID, environment: environment, kind: kind)] else { continue }
                    senders.addTask {
                        let part = messages.part(indices.count == messages.count ? nil : indices)
                        do {
                            for try await outcome in client.send(contentsOf: part, logger: logger) {
                                collector.record(BatchMessages.outcome(outcome.result, keepingID: keepsIDs), at: indices[outcome.index])
                            }
                        } catch {
                            logger.error("the send ended early", metadata: ["error": "\(error)", "environment": "\(environment)"])
                        }
                    }
                }
            }
            collector.stop()
        }
        await collector.wait()
        let browserOutcomes = await browsers.outcomes() + android.outcomes()
        _ = sender  // left to finish on its own if the grace period ran out
        var outcomes = collector.take()
        outcomes += messages.invalid.map { DeliveryOutcome(token: $0, result: .failed(reason: .apns(.badDeviceToken))) }
        outcomes += browserOutcomes
        await record(whole, outcomes, logger: logger, start: start)
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

    /// Sends `items` (Android devices of `batch`) through the app's FCM client, all at once up to
    /// the client's in-flight bound, and returns an outcome for each.
    private func sendToAndroid(_ items: [WorkItem], of batch: WorkBatch, app: GatewayConfiguration.App, client: FCMClient?, logger: Logger) async -> [DeliveryOutcome] {
        guard let client else {
            return items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.fcmNotConfigured))) }
        }
        let addresses: [String: FCMAddress]
        do {
            addresses = try await store.fcmAddresses(app: app.id, tokens: items.map(\.token))
        } catch {
            logger.warning("cannot read the batch's FCM registration tokens; retrying later", metadata: ["error": "\(error)"])
            return items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .gateway(.connectionFailed))) }
        }
        let now = Date()
        let message: FCMMessage
        do throws(FCMError) {
            message = try AndroidMessages.message(for: batch.notification, now: now)
        } catch {
            logger.warning("the notification makes no valid FCM message", metadata: ["error": "\(error.message)"])
            return items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.payloadInvalid))) }
        }
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(items.count)
        var tokens: [String] = []
        var registrationTokens: [String] = []
        for item in items {
            // Deleted since the claim: nothing to send to.
            guard let address = addresses[item.token] else {
                outcomes.append(DeliveryOutcome(token: item.token, result: .rejected(reason: .gateway(.fcmUnregistered), timestamp: now)))
                continue
            }
            tokens.append(item.token)
            registrationTokens.append(address.registrationToken)
        }
        let results = await client.send(message, toEach: registrationTokens)
        let answered = Date()
        for (token, result) in zip(tokens, results) {
            outcomes.append(DeliveryOutcome(token: token, result: AndroidMessages.outcome(result, now: answered)))
        }
        return outcomes
    }

    /// Sends `items` (browsers of `batch`) through the app's Web Push client, all at once up to
    /// the client's in-flight bound, and returns an outcome for each.
    private func sendToBrowsers(_ items: [WorkItem], of batch: WorkBatch, app: GatewayConfiguration.App, client: WebPushClient?, logger: Logger) async -> [DeliveryOutcome] {
        let queued = batch.notification
        guard let client, let settings = app.webPush else {
            return items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.webPushNotConfigured))) }
        }
        // Web Push has no silent messages: a background push reaches no browser.
        guard queued.pushType == .alert else {
            return items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.notForBrowsers))) }
        }
        let addresses: [String: WebPushAddress]
        do {
            addresses = try await store.webPushAddresses(app: app.id, tokens: items.map(\.token))
        } catch {
            logger.warning("cannot read the batch's Web Push subscriptions; retrying later", metadata: ["error": "\(error)"])
            return items.map { DeliveryOutcome(token: $0.token, result: .retry(reason: .gateway(.connectionFailed))) }
        }
        let policy = settings.policy
        // The message is the same for every browser of the batch but for an incremented badge:
        // made once per badge value, not once per browser.
        let now = Date()
        var messages: [Int?: Result<WebPushMessage, WebPushError>] = [:]
        for badge in Set(items.map(\.badge)) {
            do throws(WebPushError) {
                messages[badge] = .success(try BrowserMessages.message(for: queued, badge: badge, defaultURL: settings.defaultURL, now: now))
            } catch {
                messages[badge] = .failure(error)
            }
        }
        // What cannot be sent is answered at once; the rest go to the client together, a group
        // per message (per badge value: one for most notifications).
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(items.count)
        var groups: [Int?: (message: WebPushMessage, tokens: [String], subscriptions: [WebPushSubscription])] = [:]
        for item in items {
            // Deleted since the claim: nothing to send to.
            guard let address = addresses[item.token] else {
                outcomes.append(DeliveryOutcome(token: item.token, result: .rejected(reason: .gateway(.subscriptionGone), timestamp: now)))
                continue
            }
            do throws(WebPushError) {
                let message = try messages[item.badge]!.get()
                let subscription = try WebPushSubscription(endpoint: address.endpoint, p256dh: address.p256dh, auth: address.auth, policy: policy)
                groups[item.badge, default: (message, [], [])].tokens.append(item.token)
                groups[item.badge]!.subscriptions.append(subscription)
            } catch {
                let reason: DeliveryReason =
                    error.code == .payloadTooLarge ? .apns(.payloadTooLarge) : error.code == .endpointNotAllowed ? .gateway(.endpointNotAllowed) : .gateway(.payloadInvalid)
                outcomes.append(DeliveryOutcome(token: item.token, result: .failed(reason: reason)))
            }
        }
        for (_, group) in groups {
            let results = await client.send(group.message, toEach: group.subscriptions)
            let answered = Date()
            for (token, result) in zip(group.tokens, results) {
                outcomes.append(DeliveryOutcome(token: token, result: BrowserMessages.outcome(result, now: answered)))
            }
        }
        return outcomes
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
        metrics.recordOutcomes(app: batch.notification.app, outcomes, duration: elapsed)
        if logger.logLevel <= .debug {
            for outcome in outcomes {
                switch outcome.result {
                case .accepted: continue
                case .rejected(let reason, _), .failed(let reason), .retry(let reason):
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
                }
            }
            logger.info(
                "batch sent",
                metadata: [
                    "devices": "\(outcomes.count)", "accepted": "\(counts["accepted", default: 0])", "rejected": "\(counts["rejected", default: 0])",
                    "retry": "\(counts["retry", default: 0])", "failed": "\(counts["failed", default: 0])", "resend": "\(batch.isResend)",
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
