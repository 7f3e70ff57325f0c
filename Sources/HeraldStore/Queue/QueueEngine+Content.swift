#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Templates, preferences, frequency caps and digests: stored here once for both databases.
extension QueueEngine {
    // MARK: Templates

    func putTemplate(app: String, name: String, body: [UInt8], now: Date) async throws -> StoredTemplate {
        guard let text = String(validating: body, as: UTF8.self), !text.utf8.contains(0) else {
            throw StoreError(.invalidInput, "template: must be UTF-8 text without NUL bytes")
        }
        let version = try await database.write(.durable) { [self] connection in
            try await connection.query(sql.putTemplate, [.text(app), .text(name), .text(text), .int(now.milliseconds)]).first?.int(0, default: 1) ?? 1
        }
        return StoredTemplate(app: app, name: name, version: version, body: body, updatedAt: Date(milliseconds: now.milliseconds))
    }

    func template(app: String, name: String) async throws -> StoredTemplate? {
        try await database.read { [self] connection in
            try await connection.query(sql.selectTemplate, [.text(app), .text(name)]).first.map { Self.template($0, app: app) }
        }
    }

    func templates(app: String, limit: Int, after: String?) async throws -> Page<StoredTemplate> {
        try await database.read { [self] connection in
            var templates = try await connection.query(sql.listTemplates, [.text(app), .text(after ?? ""), .int(limit + 1)]).map { Self.template($0, app: app) }
            let more = templates.count > limit
            if more { templates.removeLast() }
            return Page(items: templates, next: more ? templates.last?.name : nil)
        }
    }

    func deleteTemplate(app: String, name: String) async throws -> Bool {
        try await database.write(.durable) { [self] connection in
            try await !connection.query(sql.deleteTemplate, [.text(app), .text(name)]).isEmpty
        }
    }

    private static func template(_ row: SQLRow, app: String) -> StoredTemplate {
        StoredTemplate(
            app: app, name: row.text(0) ?? "", version: row.int(1, default: 1), body: Array((row.text(2) ?? "{}").utf8),
            updatedAt: Date(milliseconds: row.int(3) ?? 0))
    }

    // MARK: Preferences

    /// Replaces a user's choices.
    func setPreferences(_ preferences: UserPreferences, app: String, now: Date) async throws {
        var rows: [[SQLValue]] = []
        for (category, choice) in preferences.categories.sorted(by: { $0.key < $1.key }) {
            if let all = choice.all { rows.append([.text(category), .int(Self.everyPlatform), .int(all ? 1 : 0)]) }
            for (platform, enabled) in choice.platforms.sorted(by: { $0.key.code < $1.key.code }) {
                rows.append([.text(category), .int(Int64(platform.code)), .int(enabled ? 1 : 0)])
            }
        }
        try await database.write(.durable) { [self, rows] connection in
            try await connection.query(sql.deleteUserPreferences, [.text(app), .text(preferences.user)])
            if !rows.isEmpty {
                try await connection.query(sql.insertUserPreferences, [.text(app), .text(preferences.user), .rows(rows), .int(now.milliseconds)])
            }
        }
    }

    func preferences(app: String, user: String) async throws -> UserPreferences {
        try await database.read { [self] connection in
            var preferences = UserPreferences(user: user, categories: [:])
            for row in try await connection.query(sql.selectUserPreferences, [.text(app), .text(user)]) {
                let category = row.text(0) ?? ""
                let enabled = row.int(2, default: 1) != 0
                if row.int(1) == Self.everyPlatform {
                    preferences.categories[category, default: .init()].all = enabled
                } else if let platform = PlatformCode(code: row.int(1))?.platform {
                    preferences.categories[category, default: .init()].platforms[platform] = enabled
                }
                let at = Date(milliseconds: row.int(3) ?? 0)
                preferences.updatedAt = max(preferences.updatedAt ?? at, at)
            }
            return preferences
        }
    }

    /// A user's choice for every platform, as `user_preferences.platform` holds it.
    static let everyPlatform: Int64 = -1

    // MARK: Screening

    /// A batch's devices screened for its notification: each one's user and language, those that
    /// opted out of its category or are over a frequency cap (`rules`), and for a digest, what
    /// each user's digest held as it closed. One transaction; a write only when caps count or a
    /// digest closes.
    func screen(_ batch: WorkBatch, rules: ScreeningRules?, now: Date) async throws -> Screening {
        let app = batch.notification.app
        let digest = batch.notification.content?.digest
        let counts = !(rules?.caps.isEmpty ?? true)
        let body: @Sendable (any SQLConnection) async throws -> Screening = { [self] connection in
            var screening = Screening()
            // The devices' own choices, and their users' (by platform code, -1 for every one).
            var choices: [String: [String: Bool]] = [:]
            var byUser: [String: [Int64: Bool]] = [:]
            let honors = rules?.honorsPreferences == true
            let tokens = batch.items.map(\.token)
            for part in Self.chunks(tokens) {
                let rows = honors
                    ? try await connection.query(sql.deviceTraitsAndChoices, [.text(app), .devices(part), .text(rules?.category ?? "")])
                    : try await connection.query(sql.deviceTraits, [.text(app), .devices(part)])
                for row in rows {
                    guard let token = row.text(0) else { continue }
                    let user = row.text(1).flatMap { $0.isEmpty ? nil : $0 }
                    screening.traits[token] = DeviceTraits(user: user, locale: row.text(2).flatMap { $0.isEmpty ? nil : $0 })
                    guard honors else { continue }
                    if let own = row.text(3), !own.isEmpty { choices[token] = PreferenceList.decode(own) }
                    if let user, let platform = row.int(4) { byUser[user, default: [:]][platform] = row.int(5, default: 1) != 0 }
                }
            }
            if let rules {
                Self.screenPreferences(batch, rules: rules, choices: choices, users: byUser, into: &screening)
                if counts { try await screenCaps(batch, rules: rules, into: &screening, now: now, on: connection) }
            }
            if let digest {
                let users = Set(batch.items.compactMap { screening.skipped[$0.token] == nil ? screening.traits[$0.token]?.user : nil }).sorted()
                for part in Self.chunks(users) {
                    var rows = Array(part)
                    if !database.dialect.forUpdate.isEmpty {
                        rows = try await connection.query(sql.lockDigests, [.text(app), .text(digest.key), .texts(rows)]).compactMap { $0.text(1) }
                        if rows.isEmpty { continue }
                    }
                    for row in try await connection.query(sql.closeDigests, [.text(app), .text(digest.key), .text(batch.notification.id), .texts(rows)]) {
                        let items = (row.text(2) ?? "").split(separator: "\n").map(String.init)
                        screening.digests[row.text(0) ?? ""] = DigestSummary(count: row.int(1, default: 1), items: items)
                    }
                }
            }
            return screening
        }
        // Bookkeeping, as a claim's: a database that crashes may lose the last fraction of a
        // second of counts, and then the completions of the same batches too, which are sent again
        // and counted again.
        return counts || digest != nil ? try await database.write(.bookkeeping, body) : try await database.read(body)
    }

    /// Marks the devices that opted out: the device's own choice, else its user's for the
    /// device's platform, else its user's for every platform, else the category's default.
    private static func screenPreferences(
        _ batch: WorkBatch, rules: ScreeningRules, choices: [String: [String: Bool]], users byUser: [String: [Int64: Bool]], into screening: inout Screening
    ) {
        guard rules.honorsPreferences else { return }
        for item in batch.items {
            let user = screening.traits[item.token]?.user.flatMap { byUser[$0] }
            let receives = choices[item.token]?[rules.category] ?? user?[Int64(item.platform.code)] ?? user?[Self.everyPlatform] ?? rules.receivesByDefault
            if !receives { screening.skipped[item.token] = .optedOut }
        }
    }

    /// Marks the devices whose user (or the device, without one) is at a cap, and counts this
    /// notification for the others: once per user, whichever of its devices comes first, and the
    /// same answer for every device of a user (a retry or another batch finds it recorded).
    /// Each subject's row is locked, in subject order, for the check and the count: two
    /// notifications to one user in two processes take turns.
    private func screenCaps(_ batch: WorkBatch, rules: ScreeningRules, into screening: inout Screening, now: Date, on connection: any SQLConnection) async throws {
        let app = batch.notification.app
        var subjectOf: [String: String] = [:]
        for item in batch.items where screening.skipped[item.token] == nil {
            subjectOf[item.token] = screening.traits[item.token]?.user.map { "u:\($0)" } ?? "d:\(item.token)"
        }
        let subjects = Set(subjectOf.values).sorted()
        guard !subjects.isEmpty else { return }
        let time = now.milliseconds
        var decided: [String: Bool] = [:]
        for part in Self.chunks(subjects) {
            let list = Array(part)
            if !database.dialect.forUpdate.isEmpty {
                try await connection.query(sql.insertFrequency, [.text(app), .text(rules.category), .rows(list.map { [.text($0)] }), .int(time)])
            }
            var stored: [String: String] = [:]
            for row in try await connection.query(sql.selectFrequency, [.text(app), .text(rules.category), .texts(list)]) {
                stored[row.text(0) ?? ""] = row.text(1) ?? ""
            }
            var rows: [[SQLValue]] = []
            for subject in list {
                var record = FrequencyRecord(stored[subject] ?? "")
                let (allowed, changed) = record.admit(batch.notification.id, caps: rules.caps, now: time)
                decided[subject] = allowed
                if changed { rows.append([.text(subject), .text(record.stored)]) }
            }
            if !rows.isEmpty { try await connection.query(sql.upsertFrequency, [.text(app), .text(rules.category), .rows(rows), .int(time)]) }
        }
        for (token, subject) in subjectOf where decided[subject] == false { screening.skipped[token] = .capped }
    }

    // MARK: Digests

    /// At enqueue, for a notification with a digest to users: for each user, opens a digest that
    /// this notification holds (its devices are due when the window ends), or folds it into the
    /// user's open one (its devices end ``SkipReason/digested``). Returns the users folded and
    /// the time each opened digest closes (milliseconds).
    func foldDigests(
        _ digest: DigestRequest, users: [String], notification id: String, app: String, now: Date, on connection: any SQLConnection
    ) async throws -> (folded: Set<String>, opened: [String: Int64]) {
        var folded: Set<String> = []
        var opened: [String: Int64] = [:]
        let time = now.milliseconds
        let closes = time + Int64(digest.windowSeconds) * 1000
        for part in Self.chunks(Set(users).sorted()) {
            let list = Array(part)
            if !database.dialect.forUpdate.isEmpty {
                try await connection.query(sql.insertDigests, [.text(app), .text(digest.key), .rows(list.map { [.text($0)] })])
            }
            var rows: [[SQLValue]] = []
            var found: Set<String> = []
            for row in try await connection.query(sql.selectDigests, [.text(app), .text(digest.key), .texts(list)]) {
                let user = row.text(0) ?? ""
                found.insert(user)
                // Open, its window not ended, and its holder still to send (a holder cancelled,
                // or ended otherwise, would take what folds into it nowhere).
                let holderPending = row.int(9).map { $0 < Int64(NotificationState.finished.rawValue) } ?? false
                if DigestState(code: row.int(2)) == .open, (row.int(3) ?? 0) > time, holderPending {
                    folded.insert(user)
                    var items = (row.text(5) ?? "").split(separator: "\n").map(String.init)
                    if let item = digest.item { items.append(item) }
                    items = Array(items.suffix(DigestRequest.maximumItems))
                    rows.append([
                        .text(user), .text(row.text(1) ?? ""), .code(DigestState.open), .int(row.int(3) ?? closes), .int(Int64(row.int(4, default: 1) + 1)),
                        .text(items.joined(separator: "\n")), .text(row.text(6) ?? ""), .int(row.int(7) ?? 0), .text(row.text(8) ?? ""),
                    ])
                } else {
                    // A new window; the one before is kept beside it: its holder's devices may
                    // not all have been sent yet (its window ended, a worker has yet to claim them).
                    opened[user] = closes
                    rows.append([
                        .text(user), .text(id), .code(DigestState.open), .int(closes), .int(1), .text(digest.item ?? ""), .text(row.text(1) ?? ""),
                        .int(row.int(4) ?? 0), .text(row.text(5) ?? ""),
                    ])
                }
            }
            for user in list where !found.contains(user) {
                opened[user] = closes
                rows.append([.text(user), .text(id), .code(DigestState.open), .int(closes), .int(1), .text(digest.item ?? ""), .text(""), .int(0), .text("")])
            }
            if !rows.isEmpty { try await connection.query(sql.upsertDigests, [.text(app), .text(digest.key), .rows(rows)]) }
        }
        return (folded, opened)
    }
}

/// What one subject (a user, or a device without one) was sent of a category lately, as its
/// `frequency.sends` holds it: `ms.key` for each notification counted, `!ms.key` for each
/// refused (so every device of the user gets the same answer), comma-separated, oldest first;
/// `key` is 8 hex digits of the notification ID's hash. A broadcast reads and writes one such
/// row per user, so it is short, and read without splitting strings.
struct FrequencyRecord: Hashable {
    struct Entry: Hashable {
        var at: Int64
        var key: UInt32
        var allowed: Bool
    }

    var entries: [Entry]

    /// The most refusals remembered per subject: a retry of an older one decides afresh.
    static let maximumRefusals = 16
    /// The most entries read from a row (a row holds at most the largest cap's count of
    /// acceptances, and ``maximumRefusals``): what is beyond is dropped.
    static let maximumEntries = 10_000 + maximumRefusals

    init(_ stored: String) {
        entries = []
        var utf8 = stored.utf8.makeIterator()
        var at: Int64 = 0
        var key: UInt32 = 0
        var allowed = true
        var inKey = false
        var valid = true
        func finish() {
            if valid, inKey, entries.count < Self.maximumEntries { entries.append(Entry(at: at, key: key, allowed: allowed)) }
            (at, key, allowed, inKey, valid) = (0, 0, true, false, true)
        }
        var any = false
        while let byte = utf8.next() {
            any = true
            switch byte {
            case UInt8(ascii: ","): finish()
            case UInt8(ascii: "!"): allowed = false
            case UInt8(ascii: "."): inKey = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inKey {
                    key = key &<< 4 | UInt32(byte - UInt8(ascii: "0"))
                } else {
                    let (times, overflow) = at.multipliedReportingOverflow(by: 10)
                    if overflow { valid = false } else { at = times &+ Int64(byte - UInt8(ascii: "0")) }
                }
            case UInt8(ascii: "a")...UInt8(ascii: "f") where inKey: key = key &<< 4 | UInt32(byte - UInt8(ascii: "a") + 10)
            default: valid = false
            }
        }
        if any { finish() }
    }

    var stored: String {
        var text = ""
        text.reserveCapacity(entries.count * 24)
        for (index, entry) in entries.enumerated() {
            if index > 0 { text += "," }
            if !entry.allowed { text += "!" }
            text += String(entry.at)
            text += "."
            text += String(entry.key, radix: 16)
        }
        return text
    }

    /// The key a notification is remembered by: 32 bits of its ID's FNV-1a hash.
    static func key(_ notification: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in notification.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return hash
    }

    /// Whether `notification` may be sent under `caps` at `now` (milliseconds), and whether the
    /// record changed: the notification counted (or refused) once, entries older than the
    /// longest window dropped.
    mutating func admit(_ notification: String, caps: [FrequencyCap], now: Int64) -> (allowed: Bool, changed: Bool) {
        let key = Self.key(notification)
        if let earlier = entries.first(where: { $0.key == key }) { return (earlier.allowed, false) }
        let longest = Int64(caps.map(\.windowSeconds).max() ?? 0) * 1000
        entries.removeAll { $0.at <= now - longest }
        let allowed = caps.allSatisfy { cap in
            let since = now - Int64(cap.windowSeconds) * 1000
            var count = 0
            for entry in entries where entry.allowed && entry.at > since { count += 1 }
            return count < cap.count
        }
        entries.append(Entry(at: now, key: key, allowed: allowed))
        if !allowed, let oldest = entries.firstIndex(where: { !$0.allowed }), entries.lazy.filter({ !$0.allowed }).count > Self.maximumRefusals {
            entries.remove(at: oldest)
        }
        return (allowed, true)
    }
}
