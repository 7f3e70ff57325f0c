import HeraldCore
import HeraldStore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How one platform's devices are sent to: the seam between the workers and a push service.
///
/// The workers keep what every platform shares: the claim, the lease, the grace period when the
/// process stops, and recording outcomes. They split a claimed batch by platform and hand each
/// part to its platform's delivery, which sends it and records each device's outcome in the part.
/// A platform is a folder in `Platforms/` (this conformance, and its ``GatewayPlatform``), a
/// ``DevicePlatform`` case, and a line in ``GatewayPlatforms/all``.
protocol PlatformDelivery: Sendable {
    /// Sends the devices of `part` and records each one's outcome in it once, in any order, as
    /// the answers come. A device with no outcome when this returns, or when the process's grace
    /// period ends first, is retried (`shutdown`).
    func send(_ part: DeliveryPart) async

    /// The push-service host each device of `part` goes to, so that a host that keeps failing is
    /// backed off (``HostIsolation``), read without sending: what a platform reads for it (a
    /// browser's subscription) comes back to ``send(_:)`` in ``DeliveryPart/prepared``. Each
    /// platform of ``GatewayPlatforms/all`` names its hosts; by default a part has none, and is
    /// sent without a circuit.
    func hosts(of part: DeliveryPart) async -> PartHosts
}

extension PlatformDelivery {
    func hosts(of part: DeliveryPart) async -> PartHosts { PartHosts(host: nil) }
}

/// The devices of a part by the push-service host each goes to (``PlatformDelivery/hosts(of:)``).
struct PartHosts: Sendable {
    /// Each host's devices, by their index in the part, in its order (`nil`: every device). A
    /// `nil` host: devices sent to none (their app has no settings for the platform), sent
    /// without a circuit for the platform to answer for.
    var groups: [(host: String?, indices: [Int]?)]
    /// What the platform read to name the hosts, for its send (``DeliveryPart/prepared``).
    var prepared: (any Sendable)? = nil

    /// Every device to `host`.
    init(host: String?, prepared: (any Sendable)? = nil) {
        groups = [(host, nil)]
        self.prepared = prepared
    }

    /// The part's `hosts`, one per device (in its order), grouped: one group, without a list of
    /// indices, when they are all one.
    init(eachOf hosts: [String?], prepared: (any Sendable)? = nil) {
        self.prepared = prepared
        guard let first = hosts.first, hosts.contains(where: { $0 != first }) else {
            groups = [(hosts.first ?? nil, nil)]
            return
        }
        var order: [String?] = []
        var indices: [String?: [Int]] = [:]
        for (index, host) in hosts.enumerated() {
            if indices[host] == nil { order.append(host) }
            indices[host, default: []].append(index)
        }
        groups = order.map { ($0, indices[$0]) }
    }
}

/// One platform's devices of a claimed batch, and where their outcomes go.
struct DeliveryPart: Sendable {
    /// The notification and this platform's devices of the batch (only these, in the batch's order).
    var batch: WorkBatch
    /// The notification's app.
    let app: GatewayConfiguration.App
    /// For what a platform keeps beside a device (a browser's subscription, an FCM registration token).
    let store: HeraldStore
    let logger: Logger
    let outcomes: OutcomeCollector
    /// What the platform's ``PlatformDelivery/hosts(of:)`` read (a browser's subscriptions), if
    /// anything: its send uses it rather than read it again.
    var prepared: (any Sendable)? = nil
    /// When this is one host's share of the platform's part: each device's index in
    /// ``outcomes`` (`nil`: its own index).
    var positions: [Int]? = nil
    /// The circuit of the devices' push-service host, told each outcome (`nil`: none).
    var host: HostWatch? = nil
    /// The key the part's receipts are signed with; `nil`: its deliveries carry none (the app
    /// turned them off, or its keys could not be read).
    var receiptKey: ReceiptKey? = nil

    /// The devices, in the batch's order: an outcome is recorded at a device's index here.
    var items: [WorkItem] { batch.items }

    /// Records the `index`th device's outcome; a second one for it is ignored.
    func record(_ result: DeliveryOutcome.Result, at index: Int) {
        // Its host's circuit hears of it first: a failure that leaves the host backed off is
        // retried when the host is next tried.
        let result = host?.observe(result) ?? result
        if let positions {
            guard positions.indices.contains(index) else { return }
            outcomes.record(result, at: positions[index])
        } else {
            outcomes.record(result, at: index)
        }
    }

    /// Records one outcome for every device of the part (the platform is not configured, the
    /// notification makes no message for it).
    func recordEach(_ result: DeliveryOutcome.Result) {
        for index in batch.items.indices { record(result, at: index) }
    }

    /// What makes each device's receipt token (`"herald"` in its message), made at `now`; `nil`
    /// when the part's deliveries carry none.
    func receiptMaker(now: Date = Date()) -> ReceiptMaker? {
        guard let key = receiptKey, let platform = batch.items.first?.platform else { return nil }
        return ReceiptMaker(
            app: app.id, notification: batch.notification.id, platform: platform, kind: TokenKind(for: batch.notification.pushType) ?? .alert, key: key,
            now: now)
    }

    /// Whether the devices' host was backed off since this part began to be sent (its failures
    /// opened its circuit): a platform that takes devices as it sends them stops taking them, and
    /// those it did not take wait for the host with the others (``HostIsolation``).
    func hostBackedOff() -> Bool {
        host?.isBackedOff ?? false
    }
}

extension DeliveryOutcome.Result {
    /// The most of a push service's ID for an accepted message (APNs's `apns-id`, a Web Push
    /// message's `Location`, FCM's message name) the store keeps: it is the peer's to make.
    static let maximumReceiptLength = 128

    /// Accepted, with the push service's IDs (its receipt, and its unique ID where it gives one)
    /// cut to ``maximumReceiptLength`` bytes' worth of characters.
    static func accepted(boundedReceipt receipt: String?, uniqueID: String? = nil) -> Self {
        .accepted(receipt: receipt.map(bounded), uniqueID: uniqueID.map(bounded))
    }

    /// A retry no sooner than `wait` after `now` when the push service asked for one (its
    /// `Retry-After` with a 429 or 5xx), else after the queue's back-off.
    static func retry(reason: DeliveryReason, asked wait: Duration?, now: Date) -> Self {
        .retry(reason: reason, notBefore: wait.map { now.addingTimeInterval($0.seconds) })
    }

    /// Whole characters only: none is cut in two.
    private static func bounded(_ text: String) -> String {
        guard text.utf8.count > maximumReceiptLength else { return text }
        var cut = ""
        for character in text {
            guard cut.utf8.count + character.utf8.count <= maximumReceiptLength else { break }
            cut.append(character)
        }
        return cut
    }
}

extension DevicePlatform {
    /// `batch` split by the platform each device registered on, in the order of
    /// ``DevicePlatform/allCases``: most batches are of one platform, and come back whole, without
    /// a copy of their items.
    static func parts(of batch: WorkBatch) -> [(platform: DevicePlatform, batch: WorkBatch)] {
        guard let first = batch.items.first else { return [] }
        let platform = first.platform
        if !batch.items.contains(where: { $0.platform != platform }) {
            return [(platform, batch)]
        }
        var items: [DevicePlatform: [WorkItem]] = [:]
        for item in batch.items { items[item.platform, default: []].append(item) }
        return allCases.compactMap { platform in
            guard let items = items[platform] else { return nil }
            var part = batch
            part.items = items
            return (platform, part)
        }
    }
}
