import HeraldCore
import HeraldStore
import HeraldWebPush

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Browsers: each subscription read from the store, all sent through the app's Web Push client at
/// once up to its in-flight bound, a group per message.
struct WebPushDelivery: PlatformDelivery {
    /// The app's client; `nil` when the app has no `webPush` (any more).
    let client: AppClient<WebPushClient>?

    /// Each browser's push service, from its subscription's endpoint (read here, and handed to
    /// ``send(_:)``: not read twice).
    func hosts(of part: DeliveryPart) async -> PartHosts {
        guard client != nil, part.app.webPush != nil, part.batch.notification.pushType == .alert,
            let addresses = try? await part.store.addresses(WebPushAddress.self, app: part.app.id, tokens: part.items.map(\.token))
        else { return PartHosts(host: nil) }
        // Most of a batch's browsers share a few push services: each origin is named once.
        var named: [Substring: String?] = [:]
        let hosts = part.items.map { item -> String? in
            guard let endpoint = addresses[item.token]?.endpoint else { return nil }
            let origin = Self.origin(of: endpoint)
            if let name = named[origin] { return name }
            let name = PushHost.name(ofURL: origin)
            named[origin] = name
            return name
        }
        return PartHosts(eachOf: hosts, prepared: addresses)
    }

    /// The scheme and authority of `endpoint`: all before its path.
    static func origin(of endpoint: String) -> Substring {
        guard let scheme = endpoint.firstRange(of: "://") else { return endpoint[...] }
        let rest = endpoint[scheme.upperBound...]
        return endpoint[..<(rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex)]
    }

    func send(_ part: DeliveryPart) async {
        guard let client, let settings = part.app.webPush else {
            part.recordEach(.failed(reason: .webPush(.notConfigured)))
            return
        }
        await client.send(part, platform: "Web Push") { await send(part, settings: settings, through: $0) }
    }

    private func send(_ part: DeliveryPart, settings: GatewayConfiguration.WebPushSettings, through client: WebPushClient) async {
        let queued = part.batch.notification
        let items = part.items
        // Web Push has no silent messages: a background push reaches no browser.
        guard queued.pushType == .alert else {
            part.recordEach(.failed(reason: .webPush(.notForBrowsers)))
            return
        }
        let addresses: [String: WebPushAddress]
        do {
            if let read = part.prepared as? [String: WebPushAddress] {
                addresses = read
            } else {
                addresses = try await part.store.addresses(WebPushAddress.self, app: part.app.id, tokens: items.map(\.token))
            }
        } catch {
            part.logger.warning("cannot read the batch's Web Push subscriptions; retrying later", metadata: ["error": "\(error)"])
            part.recordEach(.retry(reason: .gateway(.connectionFailed)))
            return
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
        var groups: [Int?: (message: WebPushMessage, indices: [Int], subscriptions: [WebPushSubscription])] = [:]
        for (index, item) in items.enumerated() {
            // Deleted since the claim: nothing to send to.
            guard let address = addresses[item.token] else {
                part.record(.rejected(reason: .webPush(.subscriptionGone), timestamp: now), at: index)
                continue
            }
            do throws(WebPushError) {
                let message = try messages[item.badge]!.get()
                let subscription = try WebPushSubscription(endpoint: address.endpoint, p256dh: address.p256dh, auth: address.auth, policy: policy)
                groups[item.badge, default: (message, [], [])].indices.append(index)
                groups[item.badge]!.subscriptions.append(subscription)
            } catch {
                part.record(.failed(reason: BrowserMessages.reason(refusing: error)), at: index)
            }
        }
        // Each browser's receipt in its message (none when the message has no room for it, or
        // already has a `herald` member of its own).
        let maker = part.receiptMaker(now: now)
        for (_, group) in groups {
            var payloads: [[UInt8]]?
            if let maker, let members = try? JSONValue(parsing: group.message.payload).objectValue, members[ReceiptToken.payloadKey] == nil {
                payloads = group.indices.map { index in
                    maker.payload(group.message.payload, for: items[index].token, limit: WebPushEncryption.maximumPlaintextCount) ?? group.message.payload
                }
            }
            let results = await client.send(group.message, toEach: group.subscriptions, payloads: payloads)
            let answered = Date()
            for (index, result) in zip(group.indices, results) {
                part.record(BrowserMessages.outcome(result, now: answered), at: index)
            }
        }
    }
}
