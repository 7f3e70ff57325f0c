import HeraldCore
import HeraldFCM
import HeraldStore
import HeraldWebPush

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The body of `POST /v1/apps/{app}/notifications`, checked as `herald push` checks a
/// notification: a JSON object payload within its push type's size, headers APNs would accept.
/// What APNs would refuse is refused here with APNs's reason as the error code.
struct NotificationBody {
    /// The largest number of tags one notification may name.
    static let maximumTags = 32
    /// The longest idempotency key.
    static let maximumIdempotencyKeyLength = 255
    /// Room for the badge a notification that increments badges writes into each payload: the
    /// size check counts the largest one (`"badge":2147483647` and a comma, maybe an `aps`).
    static let badgeAllowance = 30

    static func parse(_ fields: JSONFields, app: GatewayConfiguration.App, limits: APILimits) throws(APIError) -> NotificationRequest {
        do {
            try fields.only([
                "to", "payload", "pushType", "priority", "expiration", "collapseID", "badge", "idempotencyKey", "sendAt", "sendAtLocalTime",
                "respectQuietHours", "ratePerSecond", "analyticsLabel",
            ] + NotificationContentBody.fieldNames + GatewayPlatforms.all.compactMap { $0.optionsKey })
            guard let to = try fields.object("to") else { throw FieldError("to", "is required: {\"tokens\": […]}, {\"users\": […]}, {\"tags\": […]} or {\"all\": true}") }
            let audience = try audience(to, limits: limits)

            // With a template, the payload is what the template's text goes into (a sound, a
            // thread): none is an empty one.
            let templated = fields.has("template") && !fields.has("payload")
            guard templated || fields.members["payload"]?.objectValue != nil else {
                throw FieldError("payload", fields.has("payload") ? "must be a JSON object (the APNs payload, e.g. {\"aps\": {\"alert\": \"Hi\"}})" : "is required (or a template)")
            }
            var writer = JSONWriter(capacity: 512)
            writer.value(fields.members["payload"] ?? .object([:]))
            let payload = writer.bytes

            var badge = BadgeMode.none
            if let mode = try fields.string("badge") {
                guard let parsed = BadgeMode(rawValue: mode), parsed != .none else { throw FieldError("badge", "must be \"increment\" (or absent)") }
                badge = parsed
            }
            let encoded = try EncodedPayload(validating: payload)
            let pushType: PushType
            if let name = try fields.string("pushType") {
                guard let parsed = PushType(rawValue: name) else {
                    throw APIError(.badRequest, APNSReason.invalidPushType.rawValue, "pushType: '\(PeerText(name, limit: 32))' is not one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                // A push type goes to the app's tokens of one kind (TokenKind, apns-spec §1.5).
                switch TokenKind(for: parsed) {
                case nil:
                    throw APIError.invalid("pushType: mdm pushes go to an MDM enrolment's own topic, not to an app's device tokens; send them with the library (HeraldAPNS)")
                case .liveactivity?:
                    throw APIError.invalid(
                        "pushType: liveactivity pushes go through the activities routes: POST /v1/apps/{app}/activities starts one on push-to-start tokens, POST /v1/apps/{app}/activities/{id}/events updates or ends one"
                    )
                default: break
                }
                pushType = parsed
            } else {
                // As `herald push` does: a content-available-only payload is a background push.
                pushType = encoded.isContentAvailableOnly ? .background : .alert
            }
            var priority: PushPriority?
            if let value = try fields.int("priority") {
                guard let parsed = PushPriority(rawValue: value) else {
                    throw APIError(.badRequest, APNSReason.badPriority.rawValue, "priority must be 10, 5 or 1")
                }
                priority = parsed
            }
            let expiration = try fields.int("expiration").map { value throws(APNSError) in try PushExpiration(unixSeconds: value) }
            let collapseID = try fields.string("collapseID")
            var idempotencyKey: String?
            if let key = try fields.string("idempotencyKey") {
                guard !key.isEmpty, key.utf8.count <= maximumIdempotencyKeyLength, PeerText.isSafe(key) else {
                    throw FieldError("idempotencyKey", "must be 1 to \(maximumIdempotencyKeyLength) printable characters")
                }
                idempotencyKey = key
            }

            // apns-spec §1.5, §1.8: the same header and size rules APNs applies.
            let headers = PushHeaders(pushType: pushType, topic: app.apnsTopic.map(pushType.topic(forBundleID:)), priority: priority, expiration: expiration, collapseID: collapseID)
            try headers.validate()
            let allowance = badge == .increment ? badgeAllowance : 0
            if encoded.count + allowance > pushType.maximumPayloadSize {
                throw APNSError(
                    local: .payloadTooLarge,
                    "the payload is \(encoded.count) bytes\(allowance > 0 ? " (plus up to \(allowance) for the badge)" : ""); APNs allows \(pushType.maximumPayloadSize) for \(pushType)"
                )
            }
            // Each platform's options, and what its devices would receive, refused now (too large,
            // or what the platform would refuse) rather than at each device later.
            let analyticsLabel = try fields.string("analyticsLabel")
            if let analyticsLabel, !FCMMessage.isAnalyticsLabel(analyticsLabel) {
                throw FieldError("analyticsLabel", "must be 1 to 50 of A-Z a-z 0-9 - _ . ~ % (Firebase's analytics label)")
            }
            let draft = NotificationDraft(
                payload: payload, pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID, badge: badge,
                analyticsLabel: analyticsLabel)
            let platformOptions = try GatewayPlatforms.options(of: draft, in: fields, app: app)
            var request = NotificationRequest(
                app: app.id, audience: audience, payload: payload, pushType: pushType, priority: priority, expiration: expiration,
                collapseID: collapseID, badge: badge, idempotencyKey: idempotencyKey
            )
            request.platformOptions = platformOptions
            request.schedule = try schedule(fields, app: app, limits: limits, now: Date())
            return request
        } catch let error as APIError {
            throw error
        } catch let error as FieldError {
            throw error.apiError
        } catch let error as APNSError {
            // The header a field becomes is named by the field, as the caller wrote it.
            let field: String? = switch error.reason {
            case .badCollapseId: "collapseID"
            case .badExpirationDate: "expiration"
            case .badPriority: "priority"
            case .badDeviceToken: nil
            default: nil
            }
            let message = error.detail ?? error.description
            throw APIError(.badRequest, error.reason.rawValue, field.map { "\($0): \(message)" } ?? message)
        } catch let error as PayloadError {
            throw APIError.invalid("payload: \(error.message)")
        } catch {
            throw APIError.invalid("\(error)")
        }
    }

    /// When the notification's devices may be sent (`sendAt`, `sendAtLocalTime`,
    /// `respectQuietHours`, `ratePerSecond`, and the app's rate ceiling); `nil`: at once.
    static func schedule(_ fields: JSONFields, app: GatewayConfiguration.App, limits: APILimits, now: Date) throws(FieldError) -> DeliverySchedule? {
        var sendAt: Date?
        if let text = try fields.string("sendAt") {
            guard let date = rfc3339(text) else {
                throw FieldError(fields.at("sendAt"), "must be an RFC 3339 time such as 2026-12-01T09:00:00Z, not \(String(reflecting: PeerText(text, limit: 40).description))")
            }
            let ahead = Double(limits.maximumScheduleAhead.components.seconds)
            guard date.timeIntervalSince(now) <= ahead else {
                throw FieldError(fields.at("sendAt"), "is more than \(Int(ahead / 86400)) days ahead (limits.maximumScheduleAheadSeconds: \(Int(ahead)))")
            }
            // A time past sends now.
            if date > now { sendAt = date }
        }
        let localTime = try fields.timeOfDay("sendAtLocalTime")
        let quiet = try fields.bool("respectQuietHours") == true
        if quiet, app.quietHours == nil {
            throw FieldError(fields.at("respectQuietHours"), "app '\(app.id)' has no quietHours in the gateway's configuration")
        }
        var rate = try fields.number("ratePerSecond")
        if let value = rate, !(value > 0 && value <= 1_000_000) {
            throw FieldError(fields.at("ratePerSecond"), "must be more than 0 and at most 1,000,000")
        }
        if let ceiling = app.maximumRatePerSecond { rate = min(rate ?? ceiling, ceiling) }
        guard sendAt != nil || localTime != nil || quiet || rate != nil else { return nil }
        var schedule = DeliverySchedule(
            sendAt: sendAt, localTime: localTime, quietHours: quiet ? app.quietHours : nil, defaultTimeZone: app.defaultTimeZone, ratePerSecond: rate
        )
        schedule.sharesAppPace = app.maximumRatePerSecond != nil
        return schedule
    }

    /// An RFC 3339 time (`2026-12-01T09:00:00Z`, `2026-12-01T10:00:00.5+01:00`).
    static func rfc3339(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    static func audience(_ to: JSONFields, limits: APILimits) throws -> Audience {
        try to.only(["tokens", "users", "tags", "all"])
        guard to.members.count == 1 else {
            throw FieldError("to", "name exactly one of tokens, users, tags or all")
        }
        if let tokens = try to.strings("tokens") {
            try checkCount(tokens.count, "to.tokens", maximum: limits.maximumAudienceSize)
            var seen = Set<String>()
            var hex: [String] = []
            for (index, token) in tokens.enumerated() {
                if GatewayPlatforms.isDeviceID(token) {
                    // A device whose address is not its ID (a browser, an Android device), by its ID.
                    if seen.insert(token).inserted { hex.append(token) }
                    continue
                }
                do {
                    let parsed = try DeviceToken(token).hex
                    if seen.insert(parsed).inserted { hex.append(parsed) }
                } catch {
                    throw FieldError("to.tokens[\(index)]", error.detail ?? error.reason.rawValue)
                }
            }
            return .tokens(hex)
        }
        if let users = try to.strings("users") {
            try checkCount(users.count, "to.users", maximum: limits.maximumAudienceSize)
            for (index, user) in users.enumerated() where !DeviceRegistration.isValidUser(user) {
                throw FieldError("to.users[\(index)]", "must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters")
            }
            return .users(Array(Set(users)).sorted())
        }
        if let tags = try to.strings("tags") {
            try checkCount(tags.count, "to.tags", maximum: maximumTags)
            for (index, tag) in tags.enumerated() where !DeviceRegistration.isValidTag(tag) {
                throw FieldError("to.tags[\(index)]", "must be 1 to 64 of A-Z a-z 0-9 . _ : -")
            }
            return .tags(Array(Set(tags)).sorted())
        }
        guard try to.bool("all") == true else { throw FieldError("to.all", "must be true") }
        return .all
    }

    private static func checkCount(_ count: Int, _ path: String, maximum: Int) throws(FieldError) {
        guard count > 0 else { throw FieldError(path, "must name at least one") }
        guard count <= maximum else { throw FieldError(path, "names \(count); at most \(maximum) per notification (use tags or all for more)") }
    }
}

/// A notification as its body describes it, for each platform's checks
/// (``GatewayPlatform/check(_:options:app:)``) before it is queued.
struct NotificationDraft {
    /// The APNs payload, as JSON text.
    var payload: [UInt8]
    var pushType: PushType
    var priority: PushPriority?
    var expiration: PushExpiration?
    var collapseID: String?
    var badge: BadgeMode
    /// A label the platforms' own delivery analytics group messages by (FCM's
    /// `fcm_options.analytics_label`); `nil`: none.
    var analyticsLabel: String? = nil
}
