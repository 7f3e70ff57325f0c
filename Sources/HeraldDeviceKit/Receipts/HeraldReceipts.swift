import Foundation

/// Reports what happens to notifications to the gateway's receipt route: `received` from the
/// Notification Service Extension, `opened`, `dismissed` and `clicked` from the app.
///
/// Events go first into the durable ``queue`` (``record(_:)``, synchronous, safe from any
/// thread or process), then to `POST {gateway}/v1/receipts` in batches of up to 100
/// (``flush()``). A batch the gateway could not take stays queued, and the queue backs off
/// (``Retry``); one it refused is dropped. The receipt token is the route's only credential:
/// the kit holds no API key.
///
/// ```swift
/// let receipts = HeraldReceipts(configuration: .init(
///     gateway: URL(string: "https://push.example.com")!,
///     directory: FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.app")!
/// ))
/// ```
public final class HeraldReceipts: Sendable {
    /// Where to report, where to queue, and how to retry.
    public struct Configuration: Sendable, Hashable {
        /// The gateway's base URL; events go to `{gateway}/v1/receipts`.
        public var gateway: URL
        /// The queue's directory: the App Group container the app and its extension share.
        public var directory: URL
        /// How much the queue keeps. Default ``HeraldReceiptQueue/Limits/standard``.
        public var limits: HeraldReceiptQueue.Limits
        /// Events per request, 1 to 100 (the route's limit). Default 100.
        public var batchSize: Int {
            didSet { batchSize = Self.clampedBatchSize(batchSize) }
        }
        /// The back-off after a failed send. Default ``Retry/standard``.
        public var retry: Retry

        /// The configuration for reporting to `gateway`, queueing in `directory`.
        public init(
            gateway: URL, directory: URL, limits: HeraldReceiptQueue.Limits = .standard, batchSize: Int = Self.maximumBatchSize,
            retry: Retry = .standard
        ) {
            self.gateway = gateway
            self.directory = directory
            self.limits = limits
            self.batchSize = Self.clampedBatchSize(batchSize)
            self.retry = retry
        }

        /// The most events the route takes in one request.
        public static let maximumBatchSize = 100

        private static func clampedBatchSize(_ size: Int) -> Int { min(max(size, 1), maximumBatchSize) }
    }

    /// Where to report, where to queue, and how to retry.
    public let configuration: Configuration
    /// The events not yet reported.
    public let queue: HeraldReceiptQueue

    private let transport: any HeraldTransport

    /// How long a flush holds the queue before another may take over (it renews it before each
    /// request): longer than a request, short enough that a killed extension does not hold up
    /// the app for long.
    static let leaseDuration: TimeInterval = 60

    /// A reporter with `configuration`, sending through `transport`.
    ///
    /// - Parameter now: the clock for ages and back-off; tests move it.
    public init(
        configuration: Configuration, transport: any HeraldTransport = URLSessionTransport(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.queue = HeraldReceiptQueue(directory: configuration.directory, limits: configuration.limits, now: now)
        self.transport = transport
    }

    /// Queues `event` to report at the next ``flush()``; returns whether it was added (not when
    /// the queue holds the same event already, or it is older than the queue keeps).
    @discardableResult
    public func record(_ event: HeraldEvent) throws(HeraldDeviceError) -> Bool {
        try queue.append(event)
    }

    /// Queues `event` and flushes the queue.
    @discardableResult
    public func report(_ event: HeraldEvent) async throws(HeraldDeviceError) -> HeraldFlushReport {
        try record(event)
        return try await flush()
    }

    /// Sends the queued events, oldest first, in batches, until the queue is empty or a send
    /// fails; returns at once while the queue is backing off or another flush is sending.
    ///
    /// Network failures do not throw: they leave the events queued and set
    /// ``HeraldFlushReport/retryAt``. Throws ``HeraldDeviceError/Code/storage`` when the queue's
    /// file cannot be used. Cancelling the task stops after the request in flight, keeping what
    /// was not sent, without backing off.
    public func flush() async throws(HeraldDeviceError) -> HeraldFlushReport {
        let owner = UUID().uuidString
        var report = HeraldFlushReport()
        defer { _ = try? queue.update { state, _ in state.release(owner) } }
        // Every round sends one batch or ends; new events arriving as fast as they are sent
        // cannot keep a flush going for ever.
        let rounds = configuration.limits.maximumEvents / configuration.batchSize + 2
        for _ in 0..<rounds {
            let claim = try queue.update { state, now in state.claim(owner: owner, size: configuration.batchSize, now: now) }
            report.pending = claim.pending
            switch claim.outcome {
            case .empty:
                return report
            case .backingOff(let until):
                report.retryAt = until
                return report
            case .busy:
                report.flushingElsewhere = true
                return report
            case .batch(let batch):
                var delivery = Delivery()
                await deliver(batch[...], owner: owner, into: &delivery)
                report.requests += delivery.requests
                let retry = configuration.retry
                let settled = try queue.update { state, now in
                    state.settle(delivery, retry: retry, now: now, random: Double.random(in: 0...1))
                }
                report.taken += delivery.taken.count
                report.dropped += delivery.dropped.count
                report.pending = settled.pending
                report.retryAt = settled.retryAt
                if delivery.stopped || Task.isCancelled { return report }
            }
        }
        return report
    }

    /// Sends `batch`, and on 413 its halves, recording in `delivery` what became of each event.
    private func deliver(_ batch: ArraySlice<HeraldEvent>, owner: String, into delivery: inout Delivery) async {
        guard !batch.isEmpty, !delivery.stopped else { return }
        guard !Task.isCancelled, (try? queue.update({ state, now in state.renew(owner, now: now) })) == true else {
            // Cancelled, or the lease was lost (this flush stalled past it): stop, keep the rest.
            delivery.stop(retryAfter: nil, backOff: false)
            return
        }
        delivery.requests += 1
        let answer: ReceiptAnswer
        do {
            answer = ReceiptAnswer(try await transport.send(receiptRequest(batch)), count: batch.count)
        } catch {
            let cancelled = error is CancellationError || Task.isCancelled
            delivery.stop(retryAfter: nil, backOff: !cancelled)
            return
        }
        switch answer {
        case .taken(let refused):
            for (index, event) in batch.enumerated() {
                if refused.contains(index) { delivery.dropped.append(event.key) } else { delivery.taken.append(event.key) }
            }
        case .refused:
            delivery.dropped += batch.map(\.key)
        case .tooLarge where batch.count == 1:
            delivery.dropped.append(batch[batch.startIndex].key)
        case .tooLarge:
            let middle = batch.startIndex + batch.count / 2
            await deliver(batch[..<middle], owner: owner, into: &delivery)
            await deliver(batch[middle...], owner: owner, into: &delivery)
        case .retry(let retryAfter):
            delivery.stop(retryAfter: retryAfter, backOff: true)
        }
    }

    /// `POST {gateway}/v1/receipts` with `{"events": [{"receipt": …, "event": …, "action": …}]}`.
    func receiptRequest(_ batch: ArraySlice<HeraldEvent>) -> HeraldRequest {
        struct Body: Encodable {
            struct Event: Encodable {
                var receipt: String
                var event: String
                var action: String?
            }
            var events: [Event]
        }
        let body = Body(events: batch.map { Body.Event(receipt: $0.receipt.token, event: $0.kind.name, action: $0.kind.action) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return HeraldRequest(
            method: .post, url: configuration.gateway.appending(components: "v1", "receipts"),
            headers: ["Content-Type": "application/json", "Accept": "application/json"],
            // Strings and arrays of them always encode.
            body: (try? encoder.encode(body)) ?? Data()
        )
    }
}
