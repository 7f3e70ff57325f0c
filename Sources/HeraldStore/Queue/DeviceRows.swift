import HeraldCore

/// A batch of registrations as the upsert statements read them: JSON rows in the order the
/// database keeps devices, so each page is touched once. Made before the database is, and
/// written straight into the statements' JSON parameters (no row of values per device first):
/// an import holds a batch being read and one being written, and this is most of what a batch
/// costs in memory.
struct DeviceRows: Sendable {
    /// `[token, user ('' clears it, null keeps it), tags, badge, hash, kind, activity type,
    /// environment, Web Push subscription, FCM registration token, time zone]`, as
    /// ``QueueStatements/upsertDevices(settingKind:)`` reads them: those that keep their stored
    /// kind, and those that give one.
    private(set) var full: JSONWriter
    private(set) var kinded: JSONWriter
    /// `[token, hash]` of devices registered with their token alone, as
    /// ``QueueStatements/upsertBareDevices`` reads them: what a bulk import mostly is.
    private(set) var bare: JSONWriter
    /// The tokens whose tags are replaced, and their rows `[token, tag, hash]`.
    private(set) var tagged: [String] = []
    private(set) var tagPairs: [[SQLValue]] = []
    let count: Int

    /// - Parameter devicesInKeyOrder: rows by `(hash, token)` (``SQLDialect/devicesInKeyOrder``), or by token.
    init(_ registrations: [DeviceRegistration], devicesInKeyOrder: Bool) {
        count = registrations.count
        full = JSONWriter(capacity: 2)
        kinded = JSONWriter(capacity: 2)
        bare = JSONWriter(capacity: 56 + 80 * registrations.count)
        full.beginArray()
        kinded.beginArray()
        bare.beginArray()
        // The order is sorted as (hash, index) pairs, not the registrations themselves: moving a
        // registration (a dozen fields) at every step of the sort was half of this type's time.
        let hashes = registrations.map { KeySpace.hash($0.token) }
        var order = Array(registrations.indices)
        if devicesInKeyOrder {
            order.sort { hashes[$0] != hashes[$1] ? hashes[$0] < hashes[$1] : registrations[$0].token < registrations[$1].token }
        } else {
            order.sort { registrations[$0].token < registrations[$1].token }
        }
        for index in order {
            let (hash, registration) = (hashes[index], registrations[index])
            if registration.isBare {
                bare.beginArray()
                bare.string(registration.token)
                bare.int(Int(hash))
                bare.endArray()
                continue
            }
            if let tags = registration.tags {
                tagged.append(registration.token)
                tagPairs += tags.sorted().map { [.text(registration.token), .text($0), .int(hash)] }
            }
            if registration.kind == nil {
                Self.write(registration, hash: hash, into: &full)
            } else {
                Self.write(registration, hash: hash, into: &kinded)
            }
        }
        full.endArray()
        kinded.endArray()
        bare.endArray()
    }

    private static func write(_ registration: DeviceRegistration, hash: Int64, into rows: inout JSONWriter) {
        rows.beginArray()
        rows.string(registration.token)
        switch registration.user {
        case .none: rows.null()
        case .some(.none): rows.string("")
        case .some(.some(let user)): rows.string(user)
        }
        if let tags = registration.tags { rows.string(TagList.encode(tags)) } else { rows.null() }
        if let badge = registration.badge { rows.int(badge) } else { rows.null() }
        rows.int(Int(hash))
        if let kind = registration.kind { rows.int(KindCode(kind).rawValue) } else { rows.null() }
        if let activityType = registration.activityType { rows.string(activityType) } else { rows.null() }
        if let environment = registration.environment { rows.int(EnvironmentCode(environment).rawValue) } else { rows.null() }
        if let address = registration.address { rows.string(address.stored) } else { rows.null() }
        rows.int(PlatformCode(registration.address?.platform ?? .apns).platform.code)
        if let timeZone = registration.timeZone { rows.string(timeZone) } else { rows.null() }
        if let locale = registration.locale { rows.string(locale) } else { rows.null() }
        if let preferences = registration.preferences { rows.string(PreferenceList.encode(preferences)) } else { rows.null() }
        rows.endArray()
    }
}
