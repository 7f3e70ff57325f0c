import HeraldCore

/// A batch of registrations as the upsert statements read them: JSON rows in the order the
/// database keeps devices, so each page is touched once. Made before the database is, and
/// written straight into the statements' JSON parameters (no row of values per device first):
/// an import holds a batch being read and one being written, and this is most of what a batch
/// costs in memory.
struct DeviceRows: Sendable {
    /// `[token, user ('' clears it, null keeps it), tags, badge, hash]`, as
    /// ``QueueStatements/upsertDevices`` reads them.
    private(set) var full: JSONWriter
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
        bare = JSONWriter(capacity: 56 + 80 * registrations.count)
        full.beginArray()
        bare.beginArray()
        var keyed = registrations.map { (hash: KeySpace.hash($0.token), registration: $0) }
        if devicesInKeyOrder {
            keyed.sort { $0.hash != $1.hash ? $0.hash < $1.hash : $0.registration.token < $1.registration.token }
        } else {
            keyed.sort { $0.registration.token < $1.registration.token }
        }
        for (hash, registration) in keyed {
            if registration.user == nil, registration.tags == nil, registration.badge == nil {
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
            full.beginArray()
            full.string(registration.token)
            switch registration.user {
            case .none: full.null()
            case .some(.none): full.string("")
            case .some(.some(let user)): full.string(user)
            }
            if let tags = registration.tags { full.string(TagList.encode(tags)) } else { full.null() }
            if let badge = registration.badge { full.int(badge) } else { full.null() }
            full.int(Int(hash))
            full.endArray()
        }
        full.endArray()
        bare.endArray()
    }
}
