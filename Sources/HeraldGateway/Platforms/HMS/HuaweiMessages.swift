import HeraldCore
import HeraldHMS
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a Huawei device receives for a notification, through Push Kit's Android API (v1) or
/// HarmonyOS NEXT's (v3), and how each Push Kit answer is recorded: pure functions, tested as
/// values (docs/hms.md, "The gateway").
enum HuaweiMessages {
    /// A notification's `hms` field: `{"android"?: {…}, "harmony"?: {…}}`, JSON merge patches
    /// (RFC 7386) over the v1 `message` and the v3 body (`payload`, `pushOptions`) the gateway
    /// derives from the APNs payload. Returns the field as stored.
    static func refinement(_ fields: JSONFields) throws(FieldError) -> [UInt8] {
        try fields.only(HMSAddress.API.allCases.map(\.rawValue))
        for api in HMSAddress.API.allCases where fields.has(api.rawValue) {
            guard case .object? = fields.members[api.rawValue] else {
                throw FieldError(fields.at(api.rawValue), "must be a JSON object: a merge patch (RFC 7386) over the Push Kit \(api == .android ? "message" : "body") the gateway derives")
            }
        }
        return Array(JSONValue.object(fields.members).jsonString.utf8)
    }

    /// The token a message carries until the devices' replace it.
    static let placeholderToken = "herald"

    /// The Android (v1) `message` for `queued` at `now`, without tokens: derived, then the
    /// notification's `hms.android` merged over it.
    static func androidMessage(for queued: QueuedNotification, now: Date) -> JSONValue {
        let derived = android(
            payload: queued.payload, pushType: queued.pushType, expiration: queued.expiration, deadline: queued.deadline, collapseID: queued.collapseID, now: now)
        return refined(derived, by: queued.hms, api: .android)
    }

    /// HarmonyOS NEXT's (v3) `push-type` and body for `queued` at `now`, without tokens: derived,
    /// then the notification's `hms.harmony` merged over the body.
    static func harmonyMessage(for queued: QueuedNotification, now: Date) -> (pushType: HMSHarmonyMessage.PushType, body: JSONValue) {
        let derived = harmony(payload: queued.payload, pushType: queued.pushType, expiration: queued.expiration, deadline: queued.deadline, now: now)
        return (derived.pushType, refined(derived.body, by: queued.hms, api: .harmony))
    }

    /// `message` with the stored refinement's patch for `api` merged over it.
    static func refined(_ message: JSONValue, by stored: [UInt8]?, api: HMSAddress.API) -> JSONValue {
        guard let stored, let patch = (try? JSONValue(parsing: stored))?[api.rawValue] else { return message }
        return AndroidMessages.mergePatch(message, patch)
    }

    /// The title and body of `aps.alert` (a string is the body), and the custom keys.
    static func parts(of payload: [UInt8]) -> (title: String?, body: String?, custom: [String: JSONValue]) {
        var members = (try? JSONValue(parsing: payload))?.objectValue ?? [:]
        var title: String?
        var body: String?
        switch members["aps"]?["alert"] {
        case .string(let text)?:
            body = text
        case .object(let alert)?:
            title = alert["title"]?.stringValue
            body = alert["body"]?.stringValue
        default:
            break
        }
        members["aps"] = nil
        return (title, body, members)
    }

    /// Seconds left of the expiration or the maximum age, at most Push Kit's 15 days: a retry
    /// sends a smaller one; 0 for "now or never".
    static func timeToLive(expiration: PushExpiration?, deadline: Date, now: Date) -> Int {
        let seconds: Int
        switch expiration {
        case .immediately?: seconds = 0
        case .at(let date)?: seconds = BrowserMessages.seconds(from: now, to: date)
        case nil: seconds = BrowserMessages.seconds(from: now, to: deadline)
        }
        return min(seconds, HMSHarmonyMessage.maximumTimeToLiveSeconds)
    }

    /// Push Kit's Android `message` for an APNs payload: `android.notification` with the title and
    /// body of `aps.alert` (empty when it has none), `click_action` "open the app" (Push Kit requires one) and `tag` the
    /// collapse ID (a shown notification with the same tag is replaced); the custom keys as
    /// `data` (one string, their JSON object); `android.ttl`. A background push is a data message.
    /// No `urgency`: `HIGH` needs Huawei's permission (80300011), so `hms.android` asks for it.
    static func android(
        payload: [UInt8], pushType: PushType, expiration: PushExpiration?, deadline: Date, collapseID: String?, now: Date
    ) -> JSONValue {
        let (title, body, custom) = parts(of: payload)
        var message: [String: JSONValue] = [:]
        var android: [String: JSONValue] = ["ttl": .string("\(timeToLive(expiration: expiration, deadline: deadline, now: now))s")]
        if pushType != .background, title != nil || body != nil {
            // Push Kit requires a title and a body ("title和message.notification.title两者最少需要设置一个");
            // an APNs alert may lack one: empty, unless `hms.android` gives it.
            var notification: [String: JSONValue] = ["click_action": ["type": 3], "title": .string(title ?? ""), "body": .string(body ?? "")]
            if let collapseID { notification["tag"] = .string(collapseID) }
            android["notification"] = .object(notification)
        }
        if !custom.isEmpty || android["notification"] == nil { message["data"] = .string(JSONValue.object(custom).jsonString) }
        message["android"] = .object(android)
        return .object(message)
    }

    /// HarmonyOS NEXT's body for an APNs payload: an alert is push type 0 with `payload.notification`
    /// (`category` `MARKETING`, the one any app may use; `title`, `body`; `clickAction` opening the
    /// app with the custom keys as its `data`); a background push is push type 6 with the custom
    /// keys' JSON as `payload.extraData`. `pushOptions.ttl` as for Android.
    static func harmony(
        payload: [UInt8], pushType: PushType, expiration: PushExpiration?, deadline: Date, now: Date
    ) -> (pushType: HMSHarmonyMessage.PushType, body: JSONValue) {
        let (title, body, custom) = parts(of: payload)
        let options: JSONValue = ["ttl": .int(timeToLive(expiration: expiration, deadline: deadline, now: now))]
        if pushType == .background {
            return (.background, ["payload": ["extraData": .string(JSONValue.object(custom).jsonString)], "pushOptions": options])
        }
        var clickAction: [String: JSONValue] = ["actionType": 0]
        if !custom.isEmpty { clickAction["data"] = .object(custom) }
        let notification: [String: JSONValue] = [
            "category": "MARKETING", "title": .string(title ?? ""), "body": .string(body ?? ""), "clickAction": .object(clickAction),
        ]
        return (.alert, ["payload": ["notification": .object(notification)], "pushOptions": options])
    }

    /// The Android message to `tokens`, `message` as Push Kit's JSON.
    static func androidMessage(_ message: JSONValue, tokens: [String]) throws(HMSError) -> HMSAndroidMessage {
        let made = try HMSAndroidMessage(raw: message, tokens: tokens)
        try made.validate()
        return made
    }

    /// The HarmonyOS NEXT message to `tokens`: `body`'s `payload` and `pushOptions`.
    static func harmonyMessage(_ body: JSONValue, pushType: HMSHarmonyMessage.PushType, tokens: [String]) throws(HMSError) -> HMSHarmonyMessage {
        let options = body["pushOptions"]
        var made = HMSHarmonyMessage(pushType: pushType, tokens: tokens, payload: body["payload"] ?? .null)
        // Validated as sent: the patched options' JSON, not re-typed.
        var object = made.jsonObject.objectValue ?? [:]
        if let options { object["pushOptions"] = options }
        try HMSHarmonyMessage.validate(.object(object), pushType: pushType.rawValue)
        if let options {
            made.options = HMSHarmonyMessage.Options(
                testMessage: options["testMessage"].flatMap { if case .bool(let value) = $0 { value } else { nil } }, timeToLiveSeconds: options["ttl"]?.intValue,
                biTag: options["biTag"]?.stringValue, receiptID: options["receiptId"]?.stringValue, collapseKey: options["collapseKey"]?.intValue)
        }
        return made
    }

    // MARK: Answers

    /// How each of `tokens` (one request's) is recorded for Push Kit's answer to it. A token Push
    /// Kit names as bad retires its device (as of the answer: one registered again since stays);
    /// one it names for another reason fails, the device kept; the rest of an accepted request are
    /// accepted under Push Kit's `requestId`. Push Kit refusing the gateway's credentials or app is
    /// retried, as APNs's credential reasons are; traffic control, 5xx and no answer are retried.
    static func outcomes(_ result: Result<HMSReceipt, HMSSendError>, tokens: [String], now: Date) -> [DeliveryOutcome.Result] {
        switch result {
        case .success(let receipt):
            let failed = Dictionary(receipt.failedTokens.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
            return tokens.map { token in
                guard let failure = failed[token] else { return .accepted(boundedReceipt: receipt.requestID) }
                return named(failure, now: now)
            }
        case .failure(let error) where error.code == .allTokensInvalid:
            // Every token invalid (80300007): those it names say why; one it does not name (its
            // list was cut) is as invalid as Push Kit said they all are.
            let failed = Dictionary(error.failedTokens.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
            return tokens.map { token in
                failed[token].map { named($0, now: now) } ?? .rejected(reason: .hms(.invalidToken), timestamp: now)
            }
        case .failure(let error):
            return Array(repeating: outcome(of: error, now: now), count: tokens.count)
        }
    }

    /// A token Push Kit named as failed.
    static func named(_ failure: HMSFailedToken, now: Date) -> DeliveryOutcome.Result {
        failure.isTokenInvalid ? .rejected(reason: .hms(.invalidToken), timestamp: now) : .rejected(reason: .hms(.notSent), timestamp: nil)
    }

    /// A request's failure, the same for each of its tokens; a retry Push Kit gave a
    /// `Retry-After` for is due then (counted from `now`).
    static func outcome(of error: HMSSendError, now: Date = Date()) -> DeliveryOutcome.Result {
        switch error.code {
        case .invalidParameter, .invalidMessage, .invalidCollapseKey, .sensitiveContent, .reviewMismatch, .messageTooBig, .invalidReceipt, .invalidRequest,
            .tooManyTokens, .noHighPriorityPermission:
            return .rejected(reason: .hms(.invalidMessage), timestamp: nil)
        case .expired:
            return .failed(reason: .gateway(.expired))
        case .unauthenticated, .tokenRefused, .oauthFailed, .noPermission, .notFound:
            return .retry(reason: .hms(.senderRefused))
        case .notConfigured:
            return .failed(reason: .hms(.notConfigured))
        case .rateLimited:
            return .retry(reason: .hms(.rateLimited), asked: error.retryAfter, now: now)
        case .internal:
            return .retry(reason: .hms(.internalError), asked: error.retryAfter, now: now)
        case .unavailable, .tooManyTopicTasks:
            return .retry(reason: .hms(.unavailable), asked: error.retryAfter, now: now)
        case .timedOut:
            return .retry(reason: .gateway(.timedOut))
        case .connectionFailed:
            return .retry(reason: .gateway(.connectionFailed))
        case .untrusted:
            // The gateway's trust store or the app's `hms.caFile` is wrong: retried, as a
            // credential refused is, so the devices are reached once it is mended.
            return .retry(reason: .gateway(.tlsFailed))
        case .rejected:
            return .rejected(reason: .hms(.rejected), timestamp: nil)
        default:
            return .retry(reason: .gateway(.shutdown))
        }
    }
}
