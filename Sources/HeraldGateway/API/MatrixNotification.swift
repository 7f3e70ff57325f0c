import HeraldCore

/// The body of `POST /_matrix/push/v1/notify` (Matrix spec, Push Gateway API v1), checked: every
/// field the spec defines has the spec's type, or the request is refused with `M_BAD_JSON` naming
/// it. Fields the spec does not define are ignored, as the spec lets servers add fields.
struct MatrixNotification: Sendable {
    /// The spec's `prio`: `high` (the default) or `low`.
    enum Priority: String, Sendable {
        case high, low
    }

    /// `counts`: the user's unacknowledged communications. The spec omits counts that are zero.
    struct Counts: Sendable, Hashable {
        var unread: Int?
        var missedCalls: Int?
    }

    /// One of `devices`: a pusher of the user.
    struct Device: Sendable {
        /// The pusher's `app_id`: which app (and platform) of the gateway it is.
        var appID: String
        /// What reaches the device; its form is the platform's (docs/matrix.md).
        var pushkey: String
        /// When the pushkey was last updated, in seconds since 1970.
        var pushkeyTimestamp: Int?
        /// The pusher's `data` (`format`, and what the app set: `default_payload`, Web Push's
        /// `endpoint` and `auth`).
        var data: [String: JSONValue]
        /// `tweaks` the user's push rules added (`sound`, `highlight`).
        var tweaks: [String: JSONValue]

        /// `data.format` is `event_id_only`: the homeserver sends ids and counts only, and the
        /// device is sent nothing more (its app fetches the event).
        var wantsIDsOnly: Bool { data["format"] == .string("event_id_only") }
    }

    var eventID: String?
    var roomID: String?
    var type: String?
    var sender: String?
    var senderDisplayName: String?
    var roomName: String?
    var roomAlias: String?
    var membership: String?
    var userIsTarget: Bool?
    var priority: Priority = .high
    var content: [String: JSONValue]?
    var counts: Counts?
    var devices: [Device] = []

    /// The most devices one request may name (a homeserver sends one pusher's per request).
    static let maximumDevices = 100

    /// Parses a request body.
    static func parse(_ bytes: some Collection<UInt8>) throws(MatrixError) -> MatrixNotification {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw MatrixError.notJSON("the body is not valid JSON: \(error)")
        }
        do throws(FieldError) {
            let root = try JSONFields(value, path: "")
            guard let fields = try root.object("notification") else { throw FieldError("notification", "is required: an object") }
            var notification = MatrixNotification()
            notification.eventID = try fields.string("event_id")
            notification.roomID = try fields.string("room_id")
            notification.type = try fields.string("type")
            notification.sender = try fields.string("sender")
            notification.senderDisplayName = try fields.string("sender_display_name")
            notification.roomName = try fields.string("room_name")
            notification.roomAlias = try fields.string("room_alias")
            notification.membership = try fields.string("membership")
            notification.userIsTarget = try fields.bool("user_is_target")
            if let prio = try fields.string("prio") {
                guard let parsed = Priority(rawValue: prio) else { throw FieldError(fields.at("prio"), "must be \"high\" or \"low\"") }
                notification.priority = parsed
            }
            if fields.has("content"), fields.members["content"] != .null {
                notification.content = try fields.object("content")?.members
            }
            if let counts = try fields.object("counts") {
                notification.counts = Counts(unread: try count(counts, "unread"), missedCalls: try count(counts, "missed_calls"))
            }
            notification.devices = try devices(fields)
            return notification
        } catch {
            throw MatrixError.badJSON(error.path.isEmpty ? error.message : "\(error.path): \(error.message)")
        }
    }

    private static func count(_ counts: JSONFields, _ name: String) throws(FieldError) -> Int? {
        guard let value = try counts.int(name) else { return nil }
        guard value >= 0 else { throw FieldError(counts.at(name), "must be 0 or more") }
        return value
    }

    private static func devices(_ fields: JSONFields) throws(FieldError) -> [Device] {
        guard case .array(let items)? = fields.members["devices"] else {
            throw FieldError(fields.at("devices"), fields.has("devices") ? "must be an array of objects" : "is required: the pushers to notify")
        }
        guard !items.isEmpty else { throw FieldError(fields.at("devices"), "must name at least one device") }
        guard items.count <= maximumDevices else { throw FieldError(fields.at("devices"), "names \(items.count); at most \(maximumDevices) a request") }
        var devices: [Device] = []
        devices.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            let device = try JSONFields(item, path: "\(fields.at("devices"))[\(index)]")
            guard let appID = try device.string("app_id") else { throw FieldError(device.at("app_id"), "is required: a string") }
            guard let pushkey = try device.string("pushkey") else { throw FieldError(device.at("pushkey"), "is required: a string") }
            let data = try device.object("data")
            if let data { _ = try data.string("format") }
            devices.append(
                Device(
                    appID: appID, pushkey: pushkey, pushkeyTimestamp: try device.int("pushkey_ts"), data: data?.members ?? [:],
                    tweaks: try device.object("tweaks")?.members ?? [:]
                )
            )
        }
        return devices
    }
}
