import HeraldAPNS
import HeraldCore
import HeraldStore

/// A claimed batch's notifications, one per device in the batch's order (a token that is not
/// valid hex, which the store never holds, is left out and listed in ``invalid``), made one at a
/// time as the send takes them: each is made once and moved into its request. An array of them
/// was copied out of element by element (a retain of each of a notification's strings, and a
/// release when the array went), on the pool thread the event loops share those strings with.
struct BatchNotifications: Sendable {
    /// The devices' tokens that are valid hex, in the batch's order.
    let tokens: [DeviceToken]
    /// The positions in the batch's items of the tokens that are not (the store never holds
    /// one), in its order.
    let invalid: [Int]
    private let headers: PushHeaders
    private let shared: EncodedPayload
    /// Each token's own payload when the badge increments and it has one (else empty).
    private let badged: [EncodedPayload?]
    /// What makes each device's receipt, and the devices' IDs (as the store keeps them) in the
    /// order of ``tokens``; `nil` when the notification carries none.
    private let receipts: (maker: ReceiptMaker, ids: [String], limit: Int)?

    /// One notification per device of `batch`.
    ///
    /// When the caller set no collapse ID, the notification's ID is sent as one, on every send:
    /// a device that gets the notification twice (its first send was in flight when a worker
    /// died) shows it once. Both copies must carry it for APNs to collapse them (apns-spec §1.5,
    /// `apns-collapse-id`).
    init(for batch: WorkBatch, topic bundleID: String, receipts maker: ReceiptMaker? = nil) throws(PayloadError) {
        let queued = batch.notification
        headers = PushHeaders(
            pushType: queued.pushType, topic: queued.pushType.topic(forBundleID: bundleID), priority: queued.priority,
            expiration: queued.expiration, collapseID: queued.collapseID ?? queued.id
        )
        let shared = try EncodedPayload(validating: queued.payload)
        self.shared = shared
        let increments = queued.badge == .increment
        var byBadge: [Int: EncodedPayload] = [:]
        var tokens: [DeviceToken] = []
        var badged: [EncodedPayload?] = []
        var invalid: [Int] = []
        tokens.reserveCapacity(batch.items.count)
        for (position, item) in batch.items.enumerated() {
            guard let token = try? DeviceToken(item.token) else {
                invalid.append(position)
                continue
            }
            tokens.append(token)
            guard increments else { continue }
            if let badge = item.badge {
                if byBadge[badge] == nil { byBadge[badge] = BatchMessages.withBadge(badge, shared) }
                badged.append(byBadge[badge])
            } else {
                badged.append(nil)
            }
        }
        self.tokens = tokens
        self.badged = badged
        self.invalid = invalid
        // A payload that has a `herald` key of its own keeps it, and carries no receipt.
        if let maker, shared.json.objectValue?[ReceiptToken.payloadKey] == nil {
            let invalid = Set(invalid)
            receipts = (maker, batch.items.indices.filter { !invalid.contains($0) }.map { batch.items[$0].token }, queued.pushType.maximumPayloadSize)
        } else {
            receipts = nil
        }
    }

    var count: Int { tokens.count }

    /// The notification to the `index`th valid token.
    subscript(index: Int) -> PushNotification {
        let payload = badged.isEmpty ? shared : badged[index] ?? shared
        guard let receipts else { return PushNotification(token: tokens[index], headers: headers, payload: payload) }
        let withReceipt = receipts.maker.payload(payload.bytes, for: receipts.ids[index], limit: receipts.limit).map { EncodedPayload(unchecked: $0) }
        return PushNotification(token: tokens[index], headers: headers, payload: withReceipt ?? payload)
    }

    /// The notifications at `indices` (every one when `nil`), in that order; once `stop` says
    /// so (asked before each one after the first), none after.
    func part(_ indices: [Int]?, stoppingWhen stop: (@Sendable () -> Bool)? = nil) -> Part {
        Part(notifications: self, indices: indices, stop: stop)
    }

    struct Part: Sequence, Sendable {
        let notifications: BatchNotifications
        let indices: [Int]?
        let stop: (@Sendable () -> Bool)?

        func makeIterator() -> Iterator { Iterator(part: self) }
        var underestimatedCount: Int { indices?.count ?? notifications.count }

        struct Iterator: IteratorProtocol {
            let part: Part
            let end: Int
            var position = 0

            init(part: Part) {
                self.part = part
                end = part.underestimatedCount
            }

            mutating func next() -> PushNotification? {
                guard position < end else { return nil }
                // Each one: the client takes a notification as another's answer frees room, and
                // once the host is backed off, each one more taken costs it all its attempts.
                if let stop = part.stop, position > 0, stop() {
                    position = end
                    return nil
                }
                defer { position += 1 }
                return part.notifications[part.indices?[position] ?? position]
            }
        }
    }
}

/// The APNs requests for a claimed batch, and how each one's outcome is recorded.
enum BatchMessages {
    /// The positions of `items` (a batch's items that have a notification, in order) by the token
    /// environment of their devices; a device without one goes to `defaultEnvironment`.
    static func groups(of items: [WorkItem], defaultEnvironment: TokenEnvironment) -> [(TokenEnvironment, [Int])] {
        if !items.contains(where: { ($0.environment ?? defaultEnvironment) != defaultEnvironment }) {
            return [(defaultEnvironment, Array(items.indices))]
        }
        var groups: [TokenEnvironment: [Int]] = [:]
        for (index, item) in items.enumerated() { groups[item.environment ?? defaultEnvironment, default: []].append(index) }
        return TokenEnvironment.allCases.compactMap { environment in groups[environment].map { (environment, $0) } }
    }

    /// The payload with `aps.badge` set (an `aps` added when there is none).
    static func withBadge(_ badge: Int, _ payload: EncodedPayload) -> EncodedPayload {
        guard case .object(var members) = payload.json else { return payload }
        var aps = members["aps"]?.objectValue ?? [:]
        aps["badge"] = .int(badge)
        members["aps"] = .object(aps)
        var writer = JSONWriter(capacity: payload.count + 32)
        writer.value(.object(members))
        return EncodedPayload(unchecked: writer.bytes)
    }

    /// How one APNs outcome is recorded in the store.
    ///
    /// A device is rejected for good only for what APNs says about the device or the request; a
    /// gateway-side problem (credentials, connectivity, APNs overloaded) is retried with back-off
    /// until the notification expires, so fixing the configuration delivers it. A notification
    /// Herald's own validation refused fails: sending it again would be refused again.
    ///
    /// An acceptance carries its APNs ID only when `keepingID` (``WorkBatch/keepsAcceptanceIDs``):
    /// a broadcast's 5,000 IDs a batch would each be copied on to the store, which drops them.
    static func outcome(_ result: APNSOutcome.Result, keepingID: Bool = true) -> DeliveryOutcome.Result {
        switch result {
        case .accepted(let response):
            return .accepted(boundedReceipt: keepingID ? response.apnsID : nil, uniqueID: keepingID ? response.apnsUniqueID : nil)
        case .rejected(let error):
            if error.origin == .local {
                return .failed(reason: .apns(error.reason))
            }
            if error.isRetryable || credentialReasons.contains(error.reason) {
                return .retry(reason: .apns(error.reason))
            }
            return .rejected(reason: .apns(error.reason), timestamp: error.timestamp)
        case .failed(let error):
            // The client gave up: APNs unreachable, no answer in time, the client stopping.
            return error.code == .expired ? .failed(reason: .gateway(.expired)) : .retry(reason: reason(error.code))
        }
    }

    /// A client failure's code as a reason: the gateway's reason of the same name (a code this
    /// Herald does not know yet is kept by name).
    static func reason(_ code: APNSClientError.Code) -> DeliveryReason {
        DeliveryReason(code.description)
    }

    /// Rejections that say the gateway's credentials are wrong, not the device (apns-spec §1.7):
    /// every device would get them, so they are retried, not recorded against the devices.
    static let credentialReasons: Set<APNSReason> = [
        .badCertificate, .badCertificateEnvironment, .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyIdInToken,
        .expiredProviderToken, .tooManyProviderTokenUpdates,
    ]
}
