import HeraldCore
import HeraldFCM
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Android devices: each registration token read from the store, all sent through the app's FCM
/// client at once up to its in-flight bound.
struct FCMDelivery: PlatformDelivery {
    /// The app's client; `nil` when the app has no `fcm` (any more).
    let client: AppClient<FCMClient>?

    /// FCM's endpoint (Google's, or the app's `fcm.endpoint`), for every device.
    func hosts(of part: DeliveryPart) async -> PartHosts {
        PartHosts(host: client == nil ? nil : part.app.fcm.flatMap { PushHost.name(ofURL: $0.endpoint) })
    }

    func send(_ part: DeliveryPart) async {
        guard let client else {
            part.recordEach(.failed(reason: .fcm(.notConfigured)))
            return
        }
        await client.send(part, platform: "FCM") { await send(part, through: $0) }
    }

    private func send(_ part: DeliveryPart, through client: FCMClient) async {
        let items = part.items
        let addresses: [String: FCMAddress]
        do {
            addresses = try await part.store.addresses(FCMAddress.self, app: part.app.id, tokens: items.map(\.token))
        } catch {
            part.logger.warning("cannot read the batch's FCM registration tokens; retrying later", metadata: ["error": "\(error)"])
            part.recordEach(.retry(reason: .gateway(.connectionFailed)))
            return
        }
        let now = Date()
        let message: FCMMessage
        do throws(FCMError) {
            message = try AndroidMessages.message(for: part.batch.notification, now: now)
        } catch {
            part.logger.warning("the notification makes no valid FCM message", metadata: ["error": "\(error.message)"])
            part.recordEach(.failed(reason: .gateway(.payloadInvalid)))
            return
        }
        var indices: [Int] = []
        var registrationTokens: [String] = []
        for (index, item) in items.enumerated() {
            // Deleted since the claim: nothing to send to.
            guard let address = addresses[item.token] else {
                part.record(.rejected(reason: .fcm(.unregistered), timestamp: now), at: index)
                continue
            }
            indices.append(index)
            registrationTokens.append(address.registrationToken)
        }
        // Each device's receipt in `data`, beside the caller's keys (absent when the message has
        // no room for it, or is raw).
        let receipts = part.receiptMaker(now: now).map { maker in
            FCMDataEntry(key: ReceiptToken.payloadKey, values: indices.map { maker.receipt(for: items[$0].token) })
        }
        let results = await client.send(message, toEach: registrationTokens, varying: receipts)
        let answered = Date()
        for (index, result) in zip(indices, results) {
            part.record(AndroidMessages.outcome(result, now: answered), at: index)
        }
    }
}
