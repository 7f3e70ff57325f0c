import HeraldCore
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The bodies of `POST /v1/apps/{app}/activities` (start a Live Activity on push-to-start
/// tokens) and `POST …/activities/{id}/events` (update or end one on its update tokens), made
/// into `liveactivity` pushes (apns-spec §3.1: `event`, `timestamp`, `content-state`,
/// `attributes-type`, `attributes`, `stale-date`, `dismissal-date`, `relevance-score`,
/// `input-push-token`).
///
/// The payload, with its `timestamp` (the time the request was accepted), is built once and
/// stored: a retry sends the same bytes, so a late retry never carries a newer timestamp than an
/// update accepted after it, and the device, which drops an older timestamp than the last it
/// showed, is never rolled back.
enum ActivityBody {
    /// How long an ended activity's tokens are kept without a `dismissalDate`: the system removes
    /// an ended activity within four hours (apns-spec §3.1 `dismissal-date`).
    static let defaultDismissal: TimeInterval = 4 * 3600

    /// A start, to the audience's push-to-start tokens of `activityType`.
    static func start(_ fields: JSONFields, app: GatewayConfiguration.App, topic: String, limits: APILimits, now: Date) throws(APIError) -> NotificationRequest {
        try answered {
            try fields.only([
                "to", "activityType", "attributes", "contentState", "alert", "staleDate", "relevanceScore", "priority", "expiration", "idempotencyKey",
                "sendAt", "sendAtLocalTime", "respectQuietHours", "ratePerSecond",
            ])
            guard let to = try fields.object("to") else { throw FieldError("to", "is required: {\"tokens\": […]}, {\"users\": […]}, {\"tags\": […]} or {\"all\": true}") }
            let audience = try NotificationBody.audience(to, limits: limits)
            let activityType = try fields.requiredString("activityType")
            guard DeviceRegistration.isValidActivityType(activityType) else {
                throw FieldError("activityType", "must be the ActivityAttributes type's name: 1 to \(DeviceRegistration.maximumActivityTypeLength) of A-Z a-z 0-9 _ .")
            }
            // apns-spec §3.1: a push start needs `attributes-type`, `attributes` and an `alert`.
            let attributes = try object(fields, "attributes", required: true)!
            let contentState = try object(fields, "contentState", required: true)!
            guard let alert = fields.members["alert"], alert != .null else { throw FieldError("alert", "is required: a Live Activity start alerts the user (apns-spec §3.1)") }
            var aps = Aps(event: "start", now: now)
            aps.members.append(("content-state", contentState))
            aps.members.append(("attributes-type", .string(activityType)))
            aps.members.append(("attributes", attributes))
            aps.members.append(("alert", try checkedAlert(alert)))
            try aps.optional(fields, date: "staleDate", as: "stale-date", now: now)
            try aps.optional(fields, number: "relevanceScore", as: "relevance-score")
            // iOS 18: the started activity reports an update token (apns-spec §3.1 `input-push-token`).
            aps.members.append(("input-push-token", .int(1)))
            var start = try request(
                fields, aps: aps, app: app, topic: topic, audience: audience, defaultPriority: .immediate, activityType: activityType, endsUntil: nil
            )
            // A start may be scheduled, timed and paced as a notification is.
            start.schedule = try NotificationBody.schedule(fields, app: app, limits: limits, now: now)
            return start
        }
    }

    /// An update or an end, to every update token of `activityID`.
    static func event(_ fields: JSONFields, activityID: String, app: GatewayConfiguration.App, topic: String, now: Date) throws(APIError) -> NotificationRequest {
        try answered {
            let event = try eventParts(fields, now: now)
            return try request(
                fields, aps: event.aps, app: app, topic: topic, audience: .activity(activityID), defaultPriority: event.defaultPriority, activityType: nil,
                endsUntil: event.endsUntil
            )
        }
    }

    /// An update or an end as one broadcast to a channel (apns-spec §1.9): the same body as an
    /// activity's event, without an idempotency key (a broadcast is sent at once, not queued).
    static func broadcast(
        _ fields: JSONFields, channel: StoredChannel, topic: String, now: Date
    ) throws(APIError) -> BroadcastNotification {
        try answered {
            guard !fields.has("idempotencyKey") else {
                throw FieldError("idempotencyKey", "a broadcast is sent at once, not queued: it takes no idempotency key")
            }
            let event = try eventParts(fields, now: now)
            let priority = try priority(fields, default: event.defaultPriority)
            // A channel that stores nothing takes only apns-expiration 0 (apns-spec §1.9, A-BERR).
            var expiration = try fields.int("expiration").map { value throws(APNSError) in try PushExpiration(unixSeconds: value) }
            if !channel.storesMostRecent {
                if let expiration, expiration != .immediately {
                    throw FieldError("expiration", "must be 0 (or absent) for a channel that stores no message (storagePolicy none)")
                }
                expiration = .immediately
            }
            let payload = try EncodedPayload(validating: bytes(of: event.aps))
            let broadcast = BroadcastNotification(bundleID: topic, channelID: channel.id, payload: payload, priority: priority, expiration: expiration)
            try broadcast.validate()
            return broadcast
        }
    }

    /// What an update or an end says, whatever it is sent to.
    private static func eventParts(_ fields: JSONFields, now: Date) throws -> (aps: Aps, defaultPriority: PushPriority, endsUntil: Date?) {
        try fields.only(["event", "contentState", "alert", "staleDate", "dismissalDate", "relevanceScore", "priority", "expiration", "idempotencyKey"])
        let event = try fields.requiredString("event")
        guard event == "update" || event == "end" else {
            throw FieldError("event", "must be update or end (a start goes to POST /v1/apps/{app}/activities)")
        }
        var aps = Aps(event: event, now: now)
        aps.members.append(("content-state", try object(fields, "contentState", required: true)!))
        var hasAlert = false
        if let alert = fields.members["alert"], alert != .null {
            aps.members.append(("alert", try checkedAlert(alert)))
            hasAlert = true
        }
        try aps.optional(fields, date: "staleDate", as: "stale-date", now: now)
        try aps.optional(fields, number: "relevanceScore", as: "relevance-score")
        var endsUntil: Date?
        if event == "end" {
            let dismissal = try aps.optional(fields, date: "dismissalDate", as: "dismissal-date", now: now)
            endsUntil = dismissal ?? now.addingTimeInterval(defaultDismissal)
        } else if fields.has("dismissalDate") {
            throw FieldError("dismissalDate", "goes with event end only")
        }
        // Priority 10 counts against the activity's hourly budget (apns-spec §3.1): updates
        // without an alert default to 5; an end or an alerting update is worth 10.
        return (aps, event == "end" || hasAlert ? .immediate : .throttled, endsUntil)
    }

    /// `body`'s answer, or its error as the API's 400: a field named, or APNs's reason as the
    /// code for what APNs would refuse (as for notifications).
    private static func answered<Result>(_ body: () throws -> Result) throws(APIError) -> Result {
        do {
            return try body()
        } catch let error as FieldError {
            throw error.apiError
        } catch let error as APIError {
            throw error
        } catch let error as APNSError {
            throw APIError(.badRequest, error.reason.rawValue, error.detail ?? error.description)
        } catch {
            throw APIError.invalid("\(error)")
        }
    }

    /// The `aps` dictionary being built, in the order it is written.
    private struct Aps {
        var members: [(String, JSONValue)]

        init(event: String, now: Date) {
            members = [("timestamp", .int(Int(now.timeIntervalSince1970))), ("event", .string(event))]
        }

        /// A time given as UNIX seconds (as APNs takes it), copied when present.
        @discardableResult
        mutating func optional(_ fields: JSONFields, date name: String, as key: String, now: Date) throws(FieldError) -> Date? {
            guard let seconds = try fields.int(name) else { return nil }
            guard (0...PushExpiration.maximumUnixSeconds).contains(seconds) else {
                throw FieldError(name, "must be UNIX seconds from 0 to \(PushExpiration.maximumUnixSeconds)")
            }
            members.append((key, .int(seconds)))
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }

        mutating func optional(_ fields: JSONFields, number name: String, as key: String) throws(FieldError) {
            switch fields.members[name] {
            case .none, .some(.null): return
            case .some(let number) where number.doubleValue?.isFinite == true: members.append((key, number))
            case .some: throw FieldError(name, "must be a number")
            }
        }
    }

    private static func object(_ fields: JSONFields, _ name: String, required: Bool) throws(FieldError) -> JSONValue? {
        switch fields.members[name] {
        case .some(.object(let members)): return .object(members)
        case .none, .some(.null):
            if required { throw FieldError(name, "is required: a JSON object, as the app's Codable type decodes it") }
            return nil
        case .some: throw FieldError(name, "must be a JSON object, as the app's Codable type decodes it")
        }
    }

    /// An alert as APNs takes it: a string, or an object (title, body, sound…).
    private static func checkedAlert(_ alert: JSONValue) throws(FieldError) -> JSONValue {
        switch alert {
        case .string, .object: return alert
        default: throw FieldError("alert", "must be a string or an object ({\"title\": …, \"body\": …})")
        }
    }

    /// The request for `aps`, checked as any notification is (size, headers).
    private static func request(
        _ fields: JSONFields, aps: Aps, app: GatewayConfiguration.App, topic: String, audience: Audience, defaultPriority: PushPriority, activityType: String?,
        endsUntil: Date?
    ) throws -> NotificationRequest {
        let priority = try priority(fields, default: defaultPriority)
        let expiration = try fields.int("expiration").map { value throws(APNSError) in try PushExpiration(unixSeconds: value) }
        var idempotencyKey: String?
        if let key = try fields.string("idempotencyKey") {
            guard !key.isEmpty, key.utf8.count <= NotificationBody.maximumIdempotencyKeyLength, PeerText.isSafe(key) else {
                throw FieldError("idempotencyKey", "must be 1 to \(NotificationBody.maximumIdempotencyKeyLength) printable characters")
            }
            idempotencyKey = key
        }
        let payload = bytes(of: aps)
        let encoded = try EncodedPayload(validating: payload)
        if encoded.count > PushType.liveactivity.maximumPayloadSize {
            throw APNSError(local: .payloadTooLarge, "the Live Activity payload is \(encoded.count) bytes; APNs allows \(PushType.liveactivity.maximumPayloadSize)")
        }
        let headers = PushHeaders(pushType: .liveactivity, topic: PushType.liveactivity.topic(forBundleID: topic), priority: priority, expiration: expiration)
        try headers.validate()
        return NotificationRequest(
            app: app.id, audience: audience, payload: payload, pushType: .liveactivity, priority: priority, expiration: expiration,
            idempotencyKey: idempotencyKey, activityType: activityType, endsActivityUntil: endsUntil
        )
    }

    /// `priority`: 5 or 10, as Live Activity pushes take (apns-spec §1.5, §3.1).
    private static func priority(_ fields: JSONFields, default defaultPriority: PushPriority) throws -> PushPriority {
        guard let value = try fields.int("priority") else { return defaultPriority }
        guard let parsed = PushPriority(rawValue: value), parsed != .low else {
            throw APIError(.badRequest, APNSReason.badPriority.rawValue, "priority must be 10 or 5 for a Live Activity")
        }
        return parsed
    }

    /// `{"aps": {…}}`.
    private static func bytes(of aps: Aps) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        for (key, value) in aps.members {
            writer.key(key)
            writer.value(value)
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}
