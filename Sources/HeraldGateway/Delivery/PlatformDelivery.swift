import HeraldStore
import Logging

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
}

/// One platform's devices of a claimed batch, and where their outcomes go.
struct DeliveryPart: Sendable {
    /// The notification and this platform's devices of the batch (only these, in the batch's order).
    let batch: WorkBatch
    /// The notification's app.
    let app: GatewayConfiguration.App
    /// For what a platform keeps beside a device (a browser's subscription, an FCM registration token).
    let store: HeraldStore
    let logger: Logger
    let outcomes: OutcomeCollector

    /// The devices, in the batch's order: an outcome is recorded at a device's index here.
    var items: [WorkItem] { batch.items }

    /// Records the `index`th device's outcome; a second one for it is ignored.
    func record(_ result: DeliveryOutcome.Result, at index: Int) {
        outcomes.record(result, at: index)
    }

    /// Records one outcome for every device of the part (the platform is not configured, the
    /// notification makes no message for it).
    func recordEach(_ result: DeliveryOutcome.Result) {
        for index in batch.items.indices { outcomes.record(result, at: index) }
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
