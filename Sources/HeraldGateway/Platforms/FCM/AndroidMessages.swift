import HeraldCore
import HeraldFCM
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an Android device receives for a notification, and how each FCM answer is recorded:
/// pure functions, tested as values (docs/fcm.md).
enum AndroidMessages {
    /// A notification's `fcm` field: `{"message": {…}}`, a JSON merge patch (RFC 7386) over the
    /// FCM message derived from the APNs payload. Returns the patch as stored.
    static func refinement(_ fields: JSONFields) throws(FieldError) -> [UInt8] {
        try fields.only(["message"])
        guard case .object? = fields.members["message"] else {
            throw FieldError(fields.at("message"), "must be a JSON object: a merge patch (RFC 7386) over the FCM message the gateway derives")
        }
        return Array(fields.members["message"]!.jsonString.utf8)
    }

    /// The message for `queued` to each Android device at `now` (its token set per device): the
    /// one derived from the payload, with the notification's refinement merged over it.
    static func message(for queued: QueuedNotification, now: Date) throws(FCMError) -> FCMMessage {
        var message = derived(
            payload: queued.payload, pushType: queued.pushType, priority: queued.priority, expiration: queued.expiration, deadline: queued.deadline,
            collapseID: queued.collapseID, now: now)
        if let stored = queued.fcm, let patch = try? JSONValue(parsing: stored) { message = mergePatch(message, patch) }
        return try FCMMessage(raw: message, token: placeholderToken)
    }

    /// The token a message carries until each device's replaces it.
    static let placeholderToken = "herald"

    /// FCM's `Message` for an APNs payload: `notification.title`/`body` from `aps.alert` (a string
    /// is the body), the custom keys as `data` (strings; others as their JSON), and `android`'s
    /// `priority` (10: high, else normal), `ttl` (what is left of the expiration or maximum age:
    /// a retry sends a smaller one; 0 for "now or never") and `collapse_key` (the collapse ID). A
    /// background push (`content-available`) is a data message: no `notification`.
    static func derived(
        payload: [UInt8], pushType: PushType, priority: PushPriority?, expiration: PushExpiration?, deadline: Date, collapseID: String?, now: Date
    ) -> JSONValue {
        let members = (try? JSONValue(parsing: payload))?.objectValue ?? [:]
        var message: [String: JSONValue] = [:]
        if pushType != .background, let aps = members["aps"]?.objectValue {
            var notification: [String: JSONValue] = [:]
            switch aps["alert"] {
            case .string(let text)?:
                notification["body"] = .string(text)
            case .object(let alert)?:
                if let title = alert["title"]?.stringValue { notification["title"] = .string(title) }
                if let body = alert["body"]?.stringValue { notification["body"] = .string(body) }
            default:
                break
            }
            if !notification.isEmpty { message["notification"] = .object(notification) }
        }
        var data = members
        data["aps"] = nil
        if !data.isEmpty { message["data"] = .object(data.mapValues { .string($0.stringValue ?? $0.jsonString) }) }
        var android: [String: JSONValue] = [:]
        if let priority { android["priority"] = .string(priority == .immediate ? "high" : "normal") }
        let seconds: Int
        switch expiration {
        case .immediately?: seconds = 0
        case .at(let date)?: seconds = BrowserMessages.seconds(from: now, to: date)
        case nil: seconds = BrowserMessages.seconds(from: now, to: deadline)
        }
        android["ttl"] = .string("\(min(seconds, FCMMessage.maximumTimeToLiveSeconds))s")
        if let collapseID { android["collapse_key"] = .string(collapseID) }
        message["android"] = .object(android)
        return .object(message)
    }

    /// RFC 7386: `patch` merged over `target`; `null` members remove, objects merge, the rest
    /// replaces. Depth is the patch's (a stored JSON value, parsed with the parser's bounds).
    static func mergePatch(_ target: JSONValue, _ patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var result = target.objectValue ?? [:]
        for (key, value) in changes {
            if case .null = value {
                result[key] = nil
            } else {
                result[key] = mergePatch(result[key] ?? .null, value)
            }
        }
        return .object(result)
    }

    /// How one device's answer is recorded. `UNREGISTERED` retires the device (at the time of
    /// the answer: a token registered again since stays); a malformed token or another
    /// project's marks it invalid; FCM refusing the gateway's account or project is retried, as
    /// APNs's credential reasons are; 429, 5xx and no answer are retried.
    static func outcome(_ result: Result<FCMReceipt, FCMSendError>, now: Date) -> DeliveryOutcome.Result {
        switch result {
        case .success(let receipt):
            // FCM's name for the message (projects/…/messages/…), kept as its ID (bounded: the peer's).
            return .accepted(boundedReceipt: receipt.name)
        case .failure(let error):
            switch error.code {
            case .unregistered:
                return .rejected(reason: .fcm(.unregistered), timestamp: now)
            case .senderIDMismatch:
                return .rejected(reason: .fcm(.senderIdMismatch), timestamp: nil)
            case .invalidArgument where error.isTokenInvalid:
                return .rejected(reason: .fcm(.invalidToken), timestamp: nil)
            case .invalidArgument, .invalidMessage, .rejected:
                return .rejected(reason: .fcm(.invalidMessage), timestamp: nil)
            case .thirdPartyAuthError:
                return .failed(reason: .fcm(.thirdPartyAuthError))
            case .unauthenticated, .tokenRefused, .permissionDenied, .notFound:
                return .retry(reason: .fcm(.senderRefused))
            case .quotaExceeded:
                return .retry(reason: .fcm(.quotaExceeded), asked: error.retryAfter, now: now)
            case .internal:
                return .retry(reason: .fcm(.internalError), asked: error.retryAfter, now: now)
            case .unavailable:
                return .retry(reason: .fcm(.unavailable), asked: error.retryAfter, now: now)
            case .timedOut:
                return .retry(reason: .gateway(.timedOut))
            case .connectionFailed:
                return .retry(reason: .gateway(.connectionFailed))
            case .untrusted:
                // The gateway's trust store or the app's `fcm.caFile` is wrong: retried, as a
                // credential refused is, so the devices are reached once it is mended.
                return .retry(reason: .gateway(.tlsFailed))
            default:
                return .retry(reason: .gateway(.shutdown))
            }
        }
    }
}
