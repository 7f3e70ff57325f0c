import HeraldCore

// Named time zones need the full Foundation (the tz database through ICU), not FoundationEssentials.
import Foundation

/// When each device of a notification may be sent: a later start (`sendAt`), each device's own
/// local time of day, an app's quiet hours, and a pace. A pure value: the store works out each
/// device's time from it at enqueue (devices listed then) or as a broadcast's ranges are read,
/// and a device not yet due waits in the queue as a delivery due at its time (no polling).
public struct DeliverySchedule: Sendable, Hashable {
    /// Nothing is sent before it; `nil` or a time past: at once.
    public var sendAt: Date?
    /// Each device is sent at the next occurrence of this time of day in its own time zone (at
    /// or after ``sendAt``).
    public var localTime: TimeOfDay?
    /// Devices inside these hours (their local time) are held until they end.
    public var quietHours: QuietHours?
    /// The time zone of devices registered without one (the app's `defaultTimeZone`).
    public var defaultTimeZone: String
    /// Devices are sent at most this fast, spread evenly.
    public var ratePerSecond: Double?
    /// Whether ``ratePerSecond`` is the app's ceiling, shared by all its sends: the window this
    /// notification's devices are spread over is reserved after the app's earlier ones, in the
    /// database, so every process of the gateway keeps to it together.
    public var sharesAppPace = false

    /// Set by the store at enqueue: where the paced window starts (after the app's earlier
    /// paced sends, when its rate has a ceiling) and how many devices it spans.
    package var pacedFrom: Date?
    package var pacedCount: Int = 0

    /// The longest wait a local time or quiet hours add to a device's start: a day, and an
    /// hour for a daylight-saving change.
    static let longestLocalWait: TimeInterval = 25 * 3600

    public init(sendAt: Date? = nil, localTime: TimeOfDay? = nil, quietHours: QuietHours? = nil, defaultTimeZone: String = "UTC", ratePerSecond: Double? = nil) {
        self.sendAt = sendAt
        self.localTime = localTime
        self.quietHours = quietHours
        self.defaultTimeZone = defaultTimeZone
        self.ratePerSecond = ratePerSecond
    }

    /// Whether each device's time depends on its time zone.
    var needsTimeZones: Bool { localTime != nil || quietHours != nil }
    /// Whether devices may be due at different times (so a broadcast's devices are timed one by one).
    var timesEachDevice: Bool { needsTimeZones || ratePerSecond != nil }

    /// When sending starts: ``sendAt``, or `now` if that is past or absent.
    func start(now: Date) -> Date { max(sendAt ?? now, now) }

    /// The latest time a device may be due, for a notification queued at `now` to `count` devices:
    /// its deadline (without an APNs expiration) counts from here.
    func latestDue(now: Date, count: Int) -> Date {
        var latest = start(now: now)
        if let ratePerSecond, ratePerSecond > 0 {
            latest = max(latest, (pacedFrom ?? latest).addingTimeInterval(Double(count) / ratePerSecond))
        }
        if localTime != nil { latest = latest.addingTimeInterval(Self.longestLocalWait) }
        if quietHours != nil { latest = latest.addingTimeInterval(Self.longestLocalWait) }
        return latest
    }

    /// When a device may be sent.
    ///
    /// - Parameters:
    ///   - timeZone: the device's IANA time zone (`nil`: ``defaultTimeZone``).
    ///   - position: the device's place in the paced order, 0 up to ``pacedCount``.
    ///   - now: when the notification was queued, or when the device is read (a broadcast): a
    ///     time before it means the device is due now.
    func due(timeZone: String?, position: Double, now: Date) -> Date {
        var due = sendAt ?? now
        let zone = needsTimeZones ? (timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: defaultTimeZone) ?? .gmt) : .gmt
        if let localTime { due = localTime.next(atOrAfter: due, in: zone) }
        if let ratePerSecond, ratePerSecond > 0 {
            due = max(due, (pacedFrom ?? due).addingTimeInterval(position / ratePerSecond))
        }
        if let quietHours, quietHours.contains(due, in: zone) { due = quietHours.end.next(atOrAfter: due, in: zone) }
        return due
    }

    /// When a broadcast's range from key `lower` may first be read: the start, or the time of
    /// its first device's turn in the pace. Its devices' own times are worked out as it is read.
    func rangeReady(lower: Int64, now: Date) -> Date {
        var ready = sendAt ?? now
        if let ratePerSecond, ratePerSecond > 0 {
            ready = max(ready, (pacedFrom ?? ready).addingTimeInterval(position(ofHash: lower) / ratePerSecond))
        }
        return ready
    }

    /// The place in the paced order of a broadcast's device with key `hash` (keys are spread
    /// evenly, so the devices of a range are paced in key order without counting them).
    func position(ofHash hash: Int64) -> Double {
        Double(pacedCount) * Double(hash) / Double(KeySpace.size)
    }

    // MARK: Stored form

    /// As stored with the notification: a JSON object.
    var stored: String {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        if let sendAt {
            writer.key("sendAt")
            writer.int(Int(sendAt.milliseconds))
        }
        if let localTime {
            writer.key("localTime")
            writer.int(localTime.minutes)
        }
        if let quietHours {
            writer.key("quietHours")
            writer.beginArray()
            writer.int(quietHours.start.minutes)
            writer.int(quietHours.end.minutes)
            writer.endArray()
        }
        writer.key("zone")
        writer.string(defaultTimeZone)
        if let ratePerSecond {
            writer.key("rate")
            writer.double(ratePerSecond)
        }
        if let pacedFrom {
            writer.key("pacedFrom")
            writer.int(Int(pacedFrom.milliseconds))
        }
        if pacedCount > 0 {
            writer.key("pacedCount")
            writer.int(pacedCount)
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A stored schedule; `nil` for none, or for what this Herald never writes.
    init?(stored: String?) {
        guard let stored, let value = try? JSONValue(parsing: stored), let zone = value["zone"]?.stringValue else { return nil }
        self.init(defaultTimeZone: zone)
        sendAt = value["sendAt"]?.intValue.map { Date(milliseconds: Int64($0)) }
        localTime = value["localTime"]?.intValue.flatMap(TimeOfDay.init(minutes:))
        if case .array(let hours)? = value["quietHours"], hours.count == 2,
            let start = hours[0].intValue.flatMap(TimeOfDay.init(minutes:)), let end = hours[1].intValue.flatMap(TimeOfDay.init(minutes:))
        {
            quietHours = QuietHours(start: start, end: end)
        }
        ratePerSecond = value["rate"]?.doubleValue
        pacedFrom = value["pacedFrom"]?.intValue.map { Date(milliseconds: Int64($0)) }
        pacedCount = value["pacedCount"]?.intValue ?? 0
    }

    // MARK: Checks

    /// Whether `name` is a time zone of the IANA database (`Europe/Paris`, `UTC`), as a device
    /// or an app names one. Abbreviations (`CET`, `EST`) and offsets are not: they say nothing of
    /// daylight saving.
    public static func isTimeZone(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 64,
            name.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2F || byte == 0x5F
                    || byte == 0x2D || byte == 0x2B
            })
        else { return false }
        return name == "UTC" || (name.contains("/") && TimeZone(identifier: name) != nil)
    }
}

/// A time of day, `HH:MM` on a 24-hour clock.
public struct TimeOfDay: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after midnight, 0..<1440.
    public let minutes: Int

    public init?(minutes: Int) {
        guard (0..<1440).contains(minutes) else { return nil }
        self.minutes = minutes
    }

    /// `HH:MM` (`09:00`, `22:30`); `nil` for anything else (`9:00`, `25:00`, `12:60`).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
            bytes.enumerated().allSatisfy({ $0.offset == 2 || ($0.element >= 0x30 && $0.element <= 0x39) })
        else { return nil }
        let hour = Int(bytes[0] - 0x30) * 10 + Int(bytes[1] - 0x30)
        let minute = Int(bytes[3] - 0x30) * 10 + Int(bytes[4] - 0x30)
        guard hour < 24, minute < 60 else { return nil }
        self.init(minutes: hour * 60 + minute)
    }

    public var description: String {
        let hour = minutes / 60, minute = minutes % 60
        return "\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute)"
    }

    /// The first moment at or after `date` when clocks in `zone` show this time. On a day when
    /// it does not exist (clocks went forward over it), the moment clocks went forward.
    public func next(atOrAfter date: Date, in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = DateComponents(hour: minutes / 60, minute: minutes % 60, second: 0)
        if calendar.date(date, matchesComponents: parts) { return date }
        return calendar.nextDate(after: date, matching: parts, matchingPolicy: .nextTime) ?? date
    }

    /// Minutes after midnight that clocks in `zone` show at `date`.
    static func minutes(of date: Date, in zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }
}

/// Hours of each day, in a device's local time, when it is not sent to (`22:00` to `08:00`:
/// from ten at night to eight the next morning).
public struct QuietHours: Sendable, Hashable {
    public var start: TimeOfDay
    public var end: TimeOfDay

    public init(start: TimeOfDay, end: TimeOfDay) {
        self.start = start
        self.end = end
    }

    /// Whether clocks in `zone` show a time inside them at `date`.
    public func contains(_ date: Date, in zone: TimeZone) -> Bool {
        let now = TimeOfDay.minutes(of: date, in: zone)
        if start.minutes <= end.minutes { return now >= start.minutes && now < end.minutes }
        return now >= start.minutes || now < end.minutes
    }
}
