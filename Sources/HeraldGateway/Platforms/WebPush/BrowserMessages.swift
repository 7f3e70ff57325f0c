import HeraldCore
import HeraldStore
import HeraldWebPush

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a browser receives for a notification, and how each Web Push answer is recorded: pure
/// functions, tested as values (docs/webpush.md).
enum BrowserMessages {
    /// A notification's `webPush` field: where a click opens (`navigate`, an https URL) and/or
    /// the whole message browsers receive (`payload`, any JSON object) instead of the one derived
    /// from the APNs payload.
    struct Options: Sendable, Hashable {
        var navigate: String?
        var payload: JSONValue?

        init(_ fields: JSONFields) throws(FieldError) {
            try fields.only(["navigate", "payload"])
            if let navigate = try fields.string("navigate") {
                guard JSONFields.isHTTPSURL(navigate) else {
                    throw FieldError(fields.at("navigate"), "must be an https:// URL of at most \(JSONFields.maximumURLLength) bytes")
                }
                self.navigate = navigate
            }
            if fields.has("payload") {
                guard case .object? = fields.members["payload"] else { throw FieldError(fields.at("payload"), "must be a JSON object") }
                payload = fields.members["payload"]
            }
        }

        init?(stored: [UInt8]?) {
            guard let stored, let json = try? JSONValue(parsing: stored) else { return nil }
            navigate = json["navigate"]?.stringValue
            payload = json["payload"].flatMap { $0.objectValue == nil ? nil : $0 }
        }

        /// As the store keeps it.
        var stored: [UInt8] {
            var members: [String: JSONValue] = [:]
            if let navigate { members["navigate"] = .string(navigate) }
            if let payload { members["payload"] = payload }
            return Array(JSONValue.object(members).jsonString.utf8)
        }
    }

    /// The message for `queued` to one browser at `now`: WebKit's declarative format (`"web_push":
    /// 8030`, which Safari 18.4+ shows without a service worker, and a service worker elsewhere
    /// reads), with `TTL` from what is left of its expiration or maximum age (a retry sends a
    /// smaller one), `Urgency` from its priority and `Topic` from its collapse ID (else its ID,
    /// as APNs's `apns-collapse-id`: a message sent twice replaces its copy still waiting).
    static func message(for queued: QueuedNotification, badge: Int?, defaultURL: String, now: Date) throws(WebPushError) -> WebPushMessage {
        let payload = try Self.payload(queued.payload, badge: badge, defaultURL: defaultURL, options: Options(stored: queued.webPush))
        let timeToLive: Int
        switch queued.expiration {
        case .immediately?: timeToLive = 0
        case .at(let date)?: timeToLive = Self.seconds(from: now, to: date)
        case nil: timeToLive = Self.seconds(from: now, to: queued.deadline)
        }
        let urgency: WebPushMessage.Urgency?
        switch queued.priority {
        case .immediate?: urgency = .high
        case .throttled?: urgency = .normal
        case .low?: urgency = .low
        case nil: urgency = nil
        }
        return try WebPushMessage(
            payload: payload, timeToLive: timeToLive, urgency: urgency, topic: WebPushMessage.topic(forCollapseID: queued.collapseID ?? queued.id))
    }

    /// `{"web_push": 8030, "notification": {"title", "body", "navigate", "data"}, "app_badge"}`
    /// from an APNs payload: `aps.alert` (a string is the title; an object's `title` and `body`),
    /// the custom keys as `data`, and the badge (`badge` when the notification increments it,
    /// else `aps.badge`).
    static func payload(_ apnsPayload: [UInt8], badge: Int?, defaultURL: String, options: Options? = nil) throws(WebPushError) -> [UInt8] {
        // Given whole: sent as it is.
        if let given = options?.payload { return Array(given.jsonString.utf8) }
        guard case .object(let members)? = try? JSONValue(parsing: apnsPayload) else {
            throw WebPushError(.invalidMessage, "the stored payload is not a JSON object")
        }
        let aps = members["aps"]?.objectValue ?? [:]
        var notification: [String: JSONValue] = ["navigate": .string(options?.navigate ?? defaultURL)]
        switch aps["alert"] {
        case .string(let text)?:
            notification["title"] = .string(text)
        case .object(let alert)?:
            let title = alert["title"]?.stringValue
            let body = alert["body"]?.stringValue
            notification["title"] = .string(title ?? body ?? "")
            if title != nil, let body { notification["body"] = .string(body) }
        default:
            notification["title"] = .string("")
        }
        var custom = members
        custom["aps"] = nil
        if !custom.isEmpty { notification["data"] = .object(custom) }
        var root: [String: JSONValue] = ["web_push": .int(8030), "notification": .object(notification)]
        if let badge = badge ?? aps["badge"]?.intValue { root["app_badge"] = .int(badge) }
        return Array(JSONValue.object(root).jsonString.utf8)
    }

    /// How one browser's answer is recorded. A gone subscription retires the device (at the time
    /// of the answer); the VAPID token refused (`BadJwtToken`) is the gateway's configuration and
    /// is retried, as APNs's credential reasons are; 429, 5xx and no answer are retried; other
    /// refusals are recorded with the push service's reason. A `Retry-After` with a 429 or 5xx
    /// is the retry's time.
    static func outcome(_ result: Result<WebPushReceipt, WebPushSendError>, now: Date) -> DeliveryOutcome.Result {
        switch result {
        case .success(let receipt):
            // The message's resource at the push service, kept as its ID (bounded: it is the peer's).
            return .accepted(boundedReceipt: receipt.location)
        case .failure(let error):
            switch error.code {
            case .subscriptionGone:
                return .rejected(reason: .webPush(.subscriptionGone), timestamp: now)
            case .payloadTooLarge:
                return .failed(reason: .webPush(.payloadTooLarge))
            case .rejected:
                let reason = DeliveryReason(error.reason)
                if reason == .webPush(.badJwtToken) || error.status == 401 { return .retry(reason: .webPush(.badJwtToken)) }
                return .rejected(reason: reason, timestamp: nil)
            case .tooManyRequests:
                return .retry(reason: .webPush(.tooManyRequests), asked: error.retryAfter, now: now)
            case .serviceUnavailable:
                return .retry(reason: error.status == 500 ? .webPush(.internalServerError) : .webPush(.serviceUnavailable), asked: error.retryAfter, now: now)
            case .timedOut:
                return .retry(reason: .gateway(.timedOut))
            case .connectionFailed:
                return .retry(reason: .gateway(.connectionFailed))
            case .untrusted:
                // The push service's certificate is not trusted by this gateway (its trust store
                // or the app's `webPush.caFile`): retried, so the devices are reached once mended.
                return .retry(reason: .gateway(.tlsFailed))
            case .shutdown:
                return .retry(reason: .gateway(.shutdown))
            case .endpointNotAllowed:
                return .failed(reason: .webPush(.endpointNotAllowed))
            default:
                return .failed(reason: .gateway(.payloadInvalid))
            }
        }
    }

    /// Why a browser's message was not sent when it could not be made: too large, an endpoint the
    /// app may not send to, or a message no push service would take.
    static func reason(refusing error: WebPushError) -> DeliveryReason {
        switch error.code {
        case .payloadTooLarge: .webPush(.payloadTooLarge)
        case .endpointNotAllowed: .webPush(.endpointNotAllowed)
        default: .gateway(.payloadInvalid)
        }
    }

    /// Whole seconds from `now` to `date`, at least 0.
    static func seconds(from now: Date, to date: Date) -> Int {
        let interval = date.timeIntervalSince(now)
        guard interval.isFinite, interval > 0 else { return 0 }
        return Int(min(interval.rounded(.down), Double(Int32.max)))
    }
}
