import HeraldCore
import HeraldStore
import HeraldWebPush

/// What each platform's device receives for a Matrix notification (docs/matrix.md): pure
/// functions, tested as values. The forms follow Sygnal's (element-hq/sygnal
/// `docs/applications.md`), so apps written for Sygnal read them: APNs `room_id` and `event_id`
/// beside `aps`, FCM's flat string `data` (Sygnal's FCM v1 form), Web Push's flat JSON.
enum MatrixMessages {
    /// One device's notification, ready to queue.
    struct Push: Sendable, Hashable {
        /// The APNs payload (for other platforms, what their message is derived from).
        var payload: [UInt8]
        var pushType: PushType
        var priority: PushPriority
        /// The platform's options (``NotificationRequest/platformOptions``), if any.
        var options: [UInt8]?
    }

    /// What a device is sent.
    enum Decision: Sendable, Hashable {
        case send(Push)
        /// Nothing to show (a count update without counts, an event Web Push's `events_only` skips).
        case nothing
        /// The pusher's own data can never be sent (its `default_payload` is not an object, or
        /// is too large for the platform): the pushkey is rejected.
        case unusable(String)
    }

    /// The longest text taken from one field first; shorter ones are tried when a message would
    /// be over its platform's limit (Sygnal truncates fields to 1,024 bytes).
    static let fieldBudgets = [1024, 256, 64, 0]

    static func decision(for notification: MatrixNotification, device: MatrixNotification.Device, platform: DevicePlatform) -> Decision {
        var defaults: [String: JSONValue] = [:]
        switch device.data["default_payload"] {
        case nil, .null?: break
        case .object(let members)?: defaults = cleaned(.object(members)).objectValue ?? [:]
        default: return .unusable("data.default_payload must be an object")
        }
        // A notification about an event without its type is what a homeserver sends for
        // `event_id_only` (Sygnal reads it so); the pusher's format says so too.
        let idsOnly = notification.eventID != nil && (device.wantsIDsOnly || notification.type == nil)
        for budget in fieldBudgets {
            let built: Push?
            let limit: Int
            // Not a switch: a platform added later has no Matrix form until it is given one here.
            if platform == .apns {
                built = apns(notification, device: device, idsOnly: idsOnly, defaults: defaults, budget: budget)
                limit = built?.pushType.maximumPayloadSize ?? 0
            } else if platform == .fcm {
                built = fcm(notification, idsOnly: idsOnly, defaults: defaults, budget: budget)
                limit = fcmDataLimit
            } else if platform == .webpush {
                if device.data["events_only"] == .bool(true), notification.eventID == nil { return .nothing }
                built = webPush(notification, idsOnly: idsOnly, defaults: defaults, budget: budget)
                limit = WebPushEncryption.maximumPlaintextCount
            } else {
                return .unusable("Matrix pushers of \(platform) are not served")
            }
            guard let built else { return .nothing }
            let size = platform == .webpush ? built.options?.count ?? 0 : built.payload.count
            if size <= limit { return .send(built) }
        }
        return .unusable("data.default_payload makes every message over the \(platform) limit")
    }

    /// FCM's limit on a message's data (4,096 bytes), less room for the keys FCM counts.
    static let fcmDataLimit = 3800

    static func priority(_ priority: MatrixNotification.Priority) -> PushPriority {
        priority == .low ? .throttled : .immediate
    }

    // MARK: APNs

    /// Full: `aps.alert` (title: the sender, subtitle: the room, body: the message), `aps.badge`
    /// from `counts.unread`, `aps.sound` from the `sound` tweak, and `room_id`, `event_id`,
    /// `missed_calls` beside `aps`, over the pusher's `default_payload`. Ids only: `room_id`,
    /// `event_id`, `unread_count`, `missed_calls` and the `default_payload`'s `aps`, or
    /// `content-available` (a background push the app wakes for) when it has none.
    static func apns(
        _ notification: MatrixNotification, device: MatrixNotification.Device, idsOnly: Bool, defaults: [String: JSONValue], budget: Int
    ) -> Push? {
        var payload = defaults
        if idsOnly {
            if payload["aps"]?.objectValue == nil { payload["aps"] = ["content-available": 1] }
            payload["room_id"] = notification.roomID.map { .string(text($0, budget: 255)) }
            payload["event_id"] = notification.eventID.map { .string(text($0, budget: 255)) }
            payload["unread_count"] = notification.counts?.unread.map(JSONValue.int)
            payload["missed_calls"] = notification.counts?.missedCalls.map(JSONValue.int)
            let bytes = Array(JSONValue.object(payload).jsonString.utf8)
            let background = (try? EncodedPayload(validating: bytes))?.isContentAvailableOnly ?? false
            return Push(payload: bytes, pushType: background ? .background : .alert, priority: background ? .throttled : priority(notification.priority))
        }
        let alert = self.alert(notification, budget: budget)
        guard alert != nil || notification.counts != nil else { return nil }
        // The pusher's default payload goes with messages about events (as Sygnal's).
        if notification.type == nil { payload = [:] }
        var aps = payload["aps"]?.objectValue ?? [:]
        if let alert {
            var fields: [String: JSONValue] = ["body": .string(alert.body)]
            if let title = alert.title { fields["title"] = .string(title) }
            if let subtitle = alert.subtitle { fields["subtitle"] = .string(subtitle) }
            aps["alert"] = .object(fields)
            if case .string(let sound)? = device.tweaks["sound"] { aps["sound"] = .string(text(sound, budget: 64)) }
            payload["room_id"] = notification.roomID.map { .string(text($0, budget: 255)) }
            payload["event_id"] = notification.eventID.map { .string(text($0, budget: 255)) }
        }
        // The spec omits counts that are zero: counts without `unread` clear the badge.
        if let counts = notification.counts {
            aps["badge"] = .int(min(counts.unread ?? 0, DeviceRegistration.maximumBadge))
            payload["missed_calls"] = counts.missedCalls.map(JSONValue.int)
        }
        payload["aps"] = .object(aps)
        return Push(payload: Array(JSONValue.object(payload).jsonString.utf8), pushType: .alert, priority: priority(notification.priority))
    }

    /// What an alert says, from the event's type, its sender, its room and its content; `nil`
    /// for a notification that is not about an event (a count update).
    static func alert(_ notification: MatrixNotification, budget: Int) -> (title: String?, subtitle: String?, body: String)? {
        guard let type = notification.type else { return nil }
        // Synapse sends a count update with an empty sender: empty names are none.
        let named = { (value: String?) in value.flatMap { $0.isEmpty ? nil : text($0, budget: 128) } }
        let from = named(notification.senderDisplayName) ?? named(notification.sender)
        let room = named(notification.roomName) ?? named(notification.roomAlias)
        let content = notification.content ?? [:]
        let said = content["body"]?.stringValue.map { text($0, budget: budget) }
        let body: String
        switch type {
        case "m.room.message":
            switch content["msgtype"]?.stringValue {
            case "m.emote"?: body = "* \(from ?? "") \(said ?? "")"
            case "m.image"?: body = "sent an image"
            default: body = said.flatMap { $0.isEmpty ? nil : $0 } ?? "sent a message"
            }
        case "m.room.encrypted": body = "sent an encrypted message"
        case "m.call.invite":
            let sdp = content["offer"]?["sdp"]?.stringValue ?? ""
            body = sdp.contains("m=video") ? "is video calling" : "is calling"
        case "m.room.member" where notification.userIsTarget == true && notification.membership == "invite":
            body = room.map { "invited you to \($0)" } ?? "invited you to a chat"
        default: body = "sent an event"
        }
        return (from ?? room, from == nil ? nil : room, body)
    }

    // MARK: FCM

    /// Sygnal's FCM v1 data: `event_id`, `room_id`, `prio` (`high` or `normal`), `unread`,
    /// `missed_calls`, and for the full format `type`, `sender`, `sender_display_name`,
    /// `room_name`, `room_alias`, `membership` and each string of the content as `content_KEY`;
    /// every value a string, over the pusher's `default_payload`. A data message: the app makes
    /// its own notification.
    static func fcm(_ notification: MatrixNotification, idsOnly: Bool, defaults: [String: JSONValue], budget: Int) -> Push? {
        var data = defaults
        data["aps"] = nil
        data["event_id"] = notification.eventID.map { .string(text($0, budget: 255)) }
        data["room_id"] = notification.roomID.map { .string(text($0, budget: 255)) }
        if !idsOnly {
            let fields: [(String, String?)] = [
                ("type", notification.type), ("sender", notification.sender), ("sender_display_name", notification.senderDisplayName),
                ("room_name", notification.roomName), ("room_alias", notification.roomAlias), ("membership", notification.membership),
            ]
            for (name, value) in fields { data[name] = value.map { .string(text($0, budget: min(budget, 255))) } }
            for (key, value) in notification.content ?? [:] {
                guard case .string(let string) = value, key != "formatted_body" else { continue }
                data["content_" + text(key, budget: 64)] = .string(text(string, budget: budget))
            }
        }
        if let counts = notification.counts {
            data["unread"] = .string(String(counts.unread ?? 0))
            data["missed_calls"] = counts.missedCalls.map { .string(String($0)) }
        }
        guard data["event_id"] != nil || data["room_id"] != nil || notification.counts != nil else { return nil }
        data["prio"] = .string(notification.priority == .low ? "normal" : "high")
        return Push(payload: Array(JSONValue.object(data).jsonString.utf8), pushType: .alert, priority: priority(notification.priority))
    }

    // MARK: Web Push

    /// Sygnal's Web Push message: the notification's fields flat (`room_id`, `room_name`,
    /// `room_alias`, `membership`, `event_id`, `sender`, `sender_display_name`, `user_is_target`,
    /// `type`, `content` without `formatted_body`) with `counts`' `unread` and `missed_calls`,
    /// over the pusher's `default_payload`; sent as it is (the notification's `webPush.payload`).
    static func webPush(_ notification: MatrixNotification, idsOnly: Bool, defaults: [String: JSONValue], budget: Int) -> Push? {
        var message = defaults
        message["room_id"] = notification.roomID.map { .string(text($0, budget: 255)) }
        message["event_id"] = notification.eventID.map { .string(text($0, budget: 255)) }
        if !idsOnly {
            let fields: [(String, String?)] = [
                ("room_name", notification.roomName), ("room_alias", notification.roomAlias), ("membership", notification.membership),
                ("sender", notification.sender), ("sender_display_name", notification.senderDisplayName), ("type", notification.type),
            ]
            for (name, value) in fields { message[name] = value.map { .string(text($0, budget: min(budget, 255))) } }
            if notification.userIsTarget == true { message["user_is_target"] = true }
            if var content = notification.content {
                content["formatted_body"] = nil
                if budget < fieldBudgets[0] { content = content.compactMapValues { $0.stringValue.map { .string(text($0, budget: budget)) } } }
                message["content"] = cleaned(.object(content))
            }
        }
        if let counts = notification.counts {
            message["unread"] = counts.unread.map(JSONValue.int)
            message["missed_calls"] = counts.missedCalls.map(JSONValue.int)
        }
        let options = Array(JSONValue.object(["payload": .object(message)]).jsonString.utf8)
        return Push(payload: Array("{}".utf8), pushType: .alert, priority: priority(notification.priority), options: options)
    }

    // MARK: Text

    /// `value` with NUL replaced (no stored string may hold one) and cut to at most `budget`
    /// bytes, at a character's end.
    static func text(_ value: String, budget: Int) -> String {
        var result = value.containsUTF8Byte(where: { $0 == 0 }) ? value.replacingNUL() : value
        guard result.utf8.count > budget else { return result }
        var end = result.startIndex
        var used = 0
        for index in result.indices {
            let size = result[index].utf8.count
            guard used + size <= budget else { break }
            used += size
            end = result.index(after: index)
        }
        result = String(result[..<end])
        return result
    }

    /// `value` with NUL replaced in every string and key.
    static func cleaned(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let string): .string(string.containsUTF8Byte(where: { $0 == 0 }) ? string.replacingNUL() : string)
        case .array(let items): .array(items.map(cleaned))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key.replacingNUL(), cleaned($0.value)) }, uniquingKeysWith: { first, _ in first }))
        case .null, .bool, .int, .double: value
        }
    }
}

extension String {
    /// The string with each NUL as U+FFFD.
    fileprivate func replacingNUL() -> String {
        guard containsUTF8Byte(where: { $0 == 0 }) else { return self }
        return String(String.UnicodeScalarView(unicodeScalars.map { $0 == "\0" ? "\u{FFFD}" : $0 }))
    }
}
