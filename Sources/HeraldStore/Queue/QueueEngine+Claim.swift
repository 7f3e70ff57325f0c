import HeraldCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Claims: single deliveries first, then a broadcast's next range, under a lease.
extension QueueEngine {
    func claim(owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date) async throws -> [WorkBatch] {
        for _ in 0..<Self.claimAttempts {
            let (batches, unsendable) = try await claimOnce(owner: owner, limit: limit, includeRanges: includeRanges, leaseUntil: leaseUntil, now: now)
            // Failed in a transaction of its own, once the claim has committed: the notification's
            // row is locked before its deliveries there, as cancels and completions lock them.
            // If that fails, the work stays leased until its lease runs out and is found again;
            // the batches claimed are this worker's all the same.
            if !unsendable.isEmpty {
                do {
                    try await fail(unsendable, owner: owner, now: now)
                } catch {
                    logger.warning("cannot fail work that cannot be sent; it is claimed again later", metadata: ["error": "\(error)"])
                    return batches
                }
            }
            if !batches.isEmpty || unsendable.isEmpty { return batches }
        }
        return []
    }

    private func claimOnce(
        owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date
    ) async throws -> ([WorkBatch], [UnsendableWork]) {
        try await database.write(.bookkeeping) { [self] connection in
            let lease: SQLValue = .int(leaseUntil.milliseconds)
            let time: SQLValue = .int(now.milliseconds)
            var batches: [WorkBatch] = []
            var unsendable: [UnsendableWork] = []
            // Single deliveries first: a notification to one device does not wait behind a
            // broadcast. What a lost worker held (its lease ran out) before what is due.
            let claimed = try await connection.query(sql.claimDeliveries, [.text(owner), lease, time, .int(limit)])
            if !claimed.isEmpty {
                let (sendable, bad) = try await sort(claimed, now: now, on: connection)
                unsendable += bad
                batches += try await deliveryBatches(sendable, owner: owner, on: connection)
            }
            if includeRanges, batches.isEmpty, unsendable.isEmpty {
                switch try await claimRange(owner: owner, limit: limit, lease: lease, now: now, on: connection) {
                case .none: break
                case .batch(let batch): batches.append(batch)
                case .unsendable(let work): unsendable.append(work)
                }
            }
            // Notifications still queued start sending (most claims find them sending already).
            let started = Set(batches.filter { $0.notification.isQueued }.map(\.notification.id))
            if !started.isEmpty { try await connection.query(sql.markSending, [.texts(started.sorted())]) }
            return (batches, unsendable)
        }
    }

    /// Claimed delivery rows (`id, notification_id, token, attempts, badge`) by notification:
    /// those that can be sent, and those that cannot (``Unsendable``).
    private func sort(_ claimed: [SQLRow], now: Date, on connection: any SQLConnection) async throws -> ([(QueuedNotification, [SQLRow])], [UnsendableWork]) {
        typealias Column = ClaimedColumn
        let byNotification = Dictionary(grouping: claimed.sorted { ($0.int(Column.id) ?? 0) < ($1.int(Column.id) ?? 0) }) { $0.text(Column.notificationID) ?? "" }
        let notifications = try await work(Array(byNotification.keys), now: now, on: connection)
        var sendable: [(QueuedNotification, [SQLRow])] = []
        var unsendable: [UnsendableWork] = []
        for (notificationID, rows) in byNotification.sorted(by: { $0.key < $1.key }) {
            switch notifications[notificationID]?.notification ?? .failure(.quarantined("notification \(notificationID) does not exist")) {
            case .failure(let problem):
                unsendable.append(UnsendableWork(notificationID: notificationID, notification: problem, deliveries: rows.map { ($0.int(Column.id) ?? 0, problem.reason) }))
            case .success(let notification):
                var bad = UnsendableWork(notificationID: notificationID)
                var good: [SQLRow] = []
                for row in rows {
                    // A badge column holding what no claim writes (a real number, text, out of range).
                    let stored = row[Column.badge]
                    let problem = !stored.isNull && stored.integer == nil
                        ? Unsendable.quarantined("badge \(stored.string ?? "?") is not a number") : QueuedNotification.badgeProblem(stored.integer)
                    guard row.text(Column.token) != nil, problem == nil else {
                        bad.deliveries.append((row.int(Column.id) ?? 0, (problem ?? .quarantined("no token")).reason))
                        continue
                    }
                    good.append(row)
                }
                if !bad.deliveries.isEmpty { unsendable.append(bad) }
                if !good.isEmpty { sendable.append((notification, good)) }
            }
        }
        return (sendable, unsendable)
    }

    /// One batch per notification; badges raised for devices not raised by an earlier claim of
    /// the same row (a row keeps the badge it was raised to).
    private func deliveryBatches(_ sendable: [(QueuedNotification, [SQLRow])], owner: String, on connection: any SQLConnection) async throws -> [WorkBatch] {
        let raising = sendable.filter { $0.0.badge == .increment }.flatMap { notification, rows in
            rows.filter { $0[4].isNull }.compactMap { $0.text(2) }.map { [notification.app, $0] }
        }
        if !raising.isEmpty, !database.dialect.forUpdate.isEmpty {
            let sorted = Set(raising).sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }
            try await connection.query(sql.lockDevices, [.rows(sorted.map { $0.map { .text($0) } })])
        }
        var batches: [WorkBatch] = []
        for (notification, rows) in sendable {
            var badges: [String: Int] = [:]
            let unraised = rows.filter { $0[ClaimedColumn.badge].isNull }.compactMap { $0.text(ClaimedColumn.token) }
            if notification.badge == .increment, !unraised.isEmpty {
                badges = try await raiseBadges(unraised, after: nil, app: notification.app, on: connection)
                let rows: [[SQLValue]] = unraised.map { [.text($0), .int(badges[$0] ?? 1)] }
                try await connection.query(sql.setDeliveryBadges, [.text(notification.id), .rows(rows)])
            }
            let items = rows.map { row in
                typealias Column = ClaimedColumn
                let token = row.text(Column.token) ?? ""
                return WorkItem(
                    token: token, badge: notification.badge == .increment ? row.int(Column.badge).map { Int($0) } ?? badges[token] ?? 1 : nil,
                    attempt: row.int(Column.attempts, default: 1), environment: EnvironmentCode.environment(row.int(Column.environment)),
                    platform: PlatformCode.platform(row.int(Column.platform))
                )
            }
            batches.append(
                WorkBatch(
                    notification: notification, items: items, isResend: items.contains { $0.attempt > 1 }, owner: owner,
                    source: .deliveries(rows.map { $0.int(0) ?? 0 })
                )
            )
        }
        return batches
    }

    private enum RangeClaim {
        case none
        case batch(WorkBatch)
        case unsendable(UnsendableWork)
    }

    /// The next batch of the range due first, or of one split off a range another worker holds:
    /// its devices read from the registry in key order.
    private func claimRange(owner: String, limit: Int, lease: SQLValue, now: Date, on connection: any SQLConnection) async throws -> RangeClaim {
        let time: SQLValue = .int(now.milliseconds)
        let segment: SQLRow
        let found: Work?
        if let picked = try await connection.query(sql.pickSegment, [time]).first {
            segment = picked
            found = Self.work(picked, from: Self.pickedWorkColumn, now: now)
        } else if let split = try await split(at: time, on: connection) {
            segment = split
            let id = split.text(0) ?? ""
            found = try await work([id], now: now, on: connection)[id]
        } else {
            return .none
        }
        let notificationID = segment.text(0) ?? ""
        let number = segment.int(1, default: 0)
        let upper = segment.int(3) ?? KeySpace.size
        func leaseRange(readThrough read: Int64?) async throws {
            try await connection.query(sql.leaseSegment, [.text(owner), lease, time, .text(notificationID), .int(number), .int(read)])
        }
        var stored = found?.notification ?? .failure(.quarantined("notification \(notificationID) does not exist"))
        if case .success = stored, found?.audience == nil {
            stored = .failure(.quarantined("notification \(notificationID) has audience kind \(found?.audienceKind.map(String.init) ?? "none")"))
        }
        let notification: QueuedNotification
        switch stored {
        case .failure(let problem):
            try await leaseRange(readThrough: nil)
            return .unsendable(UnsendableWork(notificationID: notificationID, notification: problem, segment: number))
        case .success(let queued):
            notification = queued
        }
        let cursor = RangeCursor(hash: segment.int(4) ?? RangeCursor.start.hash, token: segment.text(5) ?? "")
        let from = cursor.reading(from: segment.int(2) ?? 0)
        let kind: SQLValue = (try? Self.kind(of: notification.pushType)).map { .code($0) } ?? .int(-1)
        var binds: [SQLValue] = [.text(notification.app), .int(upper), .int(from.hash), .text(from.token), .int(limit), kind]
        let activityType = found?.activityType
        var tags: [String]?
        if case .tags(let list) = found?.audience { tags = list }
        func statement(ordered: Bool) -> String {
            tags == nil ? sql.rangeOfAll(activityType: activityType != nil, ordered: ordered) : sql.rangeOfTags(activityType: activityType != nil, ordered: ordered)
        }
        if let tags { binds.append(.texts(tags)) }
        if let activityType { binds.append(.text(activityType)) }
        var range = try await connection.query(statement(ordered: false), binds).first
        var (tokens, environments, platforms) = Self.lines(range?.text(0))
        var last = Self.lastKey(of: tokens, maximumHash: range?.int(1))
        if last == nil, !tokens.isEmpty {
            // Two of the batch's devices share its largest hash (or a stored hash is not the
            // address's): read it again in key order, which settles the last key.
            range = try await connection.query(statement(ordered: true), binds).first
            (tokens, environments, platforms) = Self.lines(range?.text(0))
            last = tokens.last.map { RangeCursor(hash: range?.int(1) ?? cursor.hash, token: $0) }
        }
        var badges: [String: Int] = [:]
        if notification.badge == .increment, !tokens.isEmpty {
            // Devices up to the range's raised cursor were raised by a claim whose lease ran out.
            let raised = segment.int(7).map { RangeCursor(hash: $0, token: segment.text(8) ?? "") }
            badges = try await raiseBadges(tokens, after: raised, app: notification.app, on: connection)
            if let last { try await connection.query(sql.raisedThrough, [.text(notificationID), .int(number), .int(last.hash), .text(last.token)]) }
        }
        let exhausted = tokens.count < limit
        // What lies above the batch may be split off by another worker meanwhile: none if it read to the end.
        try await leaseRange(readThrough: exhausted ? upper : last?.hash ?? cursor.hash)
        var items = tokens.indices.map { index in
            WorkItem(
                token: tokens[index], badge: notification.badge == .increment ? badges[tokens[index]] ?? 1 : nil, attempt: 1,
                environment: environments[index], platform: platforms?[index] ?? .apns)
        }
        if let schedule = notification.schedule, schedule.timesEachDevice, !items.isEmpty {
            items = try await deferNotDue(items, of: notification, schedule: schedule, now: now, on: connection)
        }
        return .batch(
            WorkBatch(
                notification: notification, items: items, isResend: DeliveryState(code: segment.int(6)) == .claimed, owner: owner,
                source: .segment(number: number, after: last ?? cursor, exhausted: exhausted)
            )
        )
    }

    /// The items of a broadcast's batch due now; the others (their local time, quiet hours or
    /// turn in a pace is ahead) stay in the queue as deliveries due at their time, keeping the
    /// badge they were raised to. A batch may so be left with nothing to send: its range moves on.
    private func deferNotDue(
        _ items: [WorkItem], of notification: QueuedNotification, schedule: DeliverySchedule, now: Date, on connection: any SQLConnection
    ) async throws -> [WorkItem] {
        let zones = schedule.needsTimeZones ? try await timeZones(of: items.map(\.token), app: notification.app, on: connection) : [:]
        var due: [WorkItem] = []
        var later: [[SQLValue]] = []
        for item in items {
            let time = schedule.due(timeZone: zones[item.token], position: schedule.position(ofHash: KeySpace.hash(item.token)), now: now)
            guard time > now else {
                due.append(item)
                continue
            }
            later.append([
                .text(item.token), .int(min(time, notification.deadline).milliseconds), item.badge.map { .int($0) } ?? .null,
                item.environment.map { .code(EnvironmentCode($0)) } ?? .null, .code(PlatformCode(item.platform)),
            ])
        }
        for part in Self.chunks(later) { try await connection.query(sql.deferRangeDevices, [.text(notification.id), .rows(Array(part))]) }
        return due
    }

    /// A batch's last key, `(hash, token)`, when its lines came in no promised order: the device
    /// with the largest hash, when it alone has that hash and it is the hash the database found
    /// largest (each row's stored hash is its address's ``KeySpace/hash(_:)``). `nil` when that
    /// is not so, or for no devices: the caller reads the batch in key order instead. Token
    /// order then decides, and a database may order text otherwise than Swift does.
    static func lastKey(of tokens: [String], maximumHash: Int64?) -> RangeCursor? {
        var largest: Int64 = .min
        var holder: Int?
        var shared = false
        // The holder by index: its token is copied once, not every token as the loop passes it.
        for (index, hash) in KeySpace.hashes(tokens).enumerated() {
            if hash > largest {
                largest = hash
                holder = index
                shared = false
            } else if hash == largest {
                shared = true
            }
        }
        guard let holder, !shared, largest == maximumHash else { return nil }
        return RangeCursor(hash: largest, token: tokens[holder])
    }

    /// Splits the leased range with the most keys left above what its holder read, when no range
    /// is free: the holder keeps the lower half of what is left, the upper half becomes a range of
    /// its own, returned as ``QueueStatements/pickSegment`` returns a range. So one broadcast keeps
    /// as many workers busy, in any number of processes, as its devices allow.
    private func split(at time: SQLValue, on connection: any SQLConnection) async throws -> SQLRow? {
        guard let row = try await connection.query(sql.pickSplittable, [time, .int(KeySpace.minimumSplit)]).first,
            let notificationID = row.text(0), let number = row.int(1), let lower = row.int(2), let upper = row.int(3), let read = row.int(5),
            let middle = KeySpace.split(lower: lower, upper: upper, cursor: row.int(4) ?? RangeCursor.start.hash, read: read)
        else { return nil }
        // Only while the range still ends where it was read to end (its holder may have moved on).
        guard try await !connection.query(sql.shortenSegment, [.text(notificationID), .int(number), .int(middle), .int(upper)]).isEmpty else { return nil }
        let split = KeySpace.splitNumber(middle)
        try await connection.query(sql.insertSplit, [.text(notificationID), .int(split), .int(middle), .int(upper), time])
        return SQLRow(values: [
            .text(notificationID), .int(split), .int(middle), .int(upper), .int(RangeCursor.start.hash), .text(RangeCursor.start.token),
            .code(SegmentState.pending), .null, .null,
        ])
    }

    /// The lines of a joined list (addresses hold no newline: they are screened for control
    /// characters). Each line is a token, and a space and its environment code when it has one
    /// (``QueueStatements/rangeLine``).
    ///
    /// Split on UTF-8 bytes: a `Character` split walks grapheme clusters, which for a batch of a
    /// thousand tokens cost more than the claim's statements. Newlines and spaces are found with
    /// `memchr`, and each token is cut from the list as a substring, whose bytes are known to be
    /// UTF-8 (split at ASCII bytes), not decoded and checked again (10,000 tokens: 144 → 120 ns
    /// each, most of what is left the token's own allocation).
    static func lines(_ joined: String?) -> (tokens: [String], environments: [TokenEnvironment?], platforms: [DevicePlatform]?) {
        guard var joined, !joined.isEmpty else { return ([], [], nil) }
        joined.makeContiguousUTF8()
        let list = joined
        return joined.withUTF8 { bytes in
            var tokens: [String] = []
            var environments: [TokenEnvironment?] = []
            // Made only when a line names a platform: most ranges are APNs devices only.
            var platforms: [DevicePlatform]?
            tokens.reserveCapacity(bytes.count / 65 + 1)
            environments.reserveCapacity(bytes.count / 65 + 1)
            let base = UnsafeRawPointer(bytes.baseAddress!)
            func find(_ byte: UInt8, from start: Int, to end: Int) -> Int? {
                memchr(base + start, Int32(byte), end - start).map { UnsafeRawPointer($0) - base }
            }
            let utf8 = list.utf8
            var start = 0
            while start <= bytes.count {
                let end = find(UInt8(ascii: "\n"), from: start, to: bytes.count) ?? bytes.count
                // The last space of the line, when it has one.
                var space: Int?
                if find(UInt8(ascii: " "), from: start, to: end) != nil {
                    space = (start..<end).last { bytes[$0] == UInt8(ascii: " ") }
                }
                tokens.append(String(list[utf8.index(utf8.startIndex, offsetBy: start)..<utf8.index(utf8.startIndex, offsetBy: space ?? end)]))
                if let space, space + 1 < end, bytes[space + 1] == UInt8(ascii: "p") {
                    // `p` and a platform's code: a device of another platform, without an environment.
                    let code = Int64(String(decoding: UnsafeBufferPointer(rebasing: bytes[(space + 2)..<end]), as: UTF8.self))
                    if platforms == nil { platforms = Array(repeating: .apns, count: tokens.count - 1) }
                    platforms!.append(PlatformCode.platform(code))
                    environments.append(nil)
                } else {
                    let code = space.flatMap { Int64(String(decoding: UnsafeBufferPointer(rebasing: bytes[($0 + 1)..<end]), as: UTF8.self)) }
                    environments.append(EnvironmentCode.environment(code))
                    platforms?.append(.apns)
                }
                start = end + 1
            }
            return (tokens, environments, platforms)
        }
    }

    /// Raises the badges of `tokens` after `cursor` (all when `nil`) and returns each device's badge now.
    private func raiseBadges(_ tokens: [String], after cursor: RangeCursor?, app: String, on connection: any SQLConnection) async throws -> [String: Int] {
        var badges: [String: Int] = [:]
        for part in Self.chunks(tokens) {
            try await connection.query(sql.raiseBadges, [.text(app), .devices(part), .int(cursor?.hash), .text(cursor?.token)])
            for row in try await connection.query(sql.selectBadges, [.text(app), .devices(part)]) {
                badges[row.text(0) ?? ""] = row.int(1, default: 0)
            }
        }
        return badges
    }

    /// A notification as claimed work needs it, or why its work cannot be sent.
    private struct Work {
        var notification: Result<QueuedNotification, Unsendable>
        var audienceKind: Int64?
        var audience: Audience?
        /// A Live Activity start's attributes type.
        var activityType: String?
    }

    /// What workers need of these notifications, by ID. Values this Herald never writes are
    /// refused rather than guessed at (``QueuedNotification/stored(id:status:app:payload:pushType:priority:expiration:collapseID:badgeMode:deadline:)``).
    ///
    /// A scheduled notification whose deadline has passed is not sent (its devices fail as
    /// expired): it waited past its expiration (issue: held, or scheduled, never sent late).
    private func work(_ ids: [String], now: Date, on connection: any SQLConnection) async throws -> [String: Work] {
        var result: [String: Work] = [:]
        for row in try await connection.query(sql.notificationsForWork, [.texts(ids)]) {
            result[row.text(0) ?? ""] = Self.work(row, from: 1, now: now)
        }
        return result
    }

    /// Where ``QueueStatements/pickSegment``'s row has the notification's ``QueueStatements/workColumns(of:)``.
    private static let pickedWorkColumn = QueueStatements.rangeColumns.count

    /// The notification whose ID is `row`'s first column, from its ``QueueStatements/workColumns(of:)`` at `first` on.
    private static func work(_ row: SQLRow, from first: Int, now: Date) -> Work {
        typealias Column = WorkColumn
        var notification = QueuedNotification.stored(
            id: row.text(0) ?? "", status: row.int(Column.status, after: first), app: row.text(Column.app, after: first),
            payload: row.blob(Column.payload, after: first), pushType: row.text(Column.pushType, after: first),
            priority: row.int(Column.priority, after: first), expiration: row.int(Column.expiration, after: first),
            collapseID: row.text(Column.collapseID, after: first), badgeMode: row.int(Column.badgeMode, after: first),
            deadline: row.int(Column.deadline, after: first)
        )
        let (options, schedule) = (row.text(Column.platformOptions, after: first), row.text(Column.schedule, after: first))
        let content = row.text(Column.content, after: first)
        if case .success(var queued) = notification, options != nil || schedule != nil || content != nil {
            queued.platformOptions = PlatformOptions.decode(options)
            queued.schedule = DeliverySchedule(stored: schedule)
            queued.content = StoredContent.decode(content, template: row.text(Column.template, after: first))
            notification = queued.schedule != nil && queued.deadline <= now ? .failure(.expired) : .success(queued)
        }
        let audienceKind = row.int(Column.audienceKind, after: first)
        return Work(
            notification: notification, audienceKind: audienceKind,
            audience: AudienceKind(code: audienceKind)?.audience(row.text(Column.audience, after: first) ?? ""),
            activityType: row.text(Column.activityType, after: first)
        )
    }

    /// Fails claimed work that cannot be sent (``Unsendable``), a notification at a time in ID
    /// order, each locked before its rows.
    private func fail(_ unsendable: [UnsendableWork], owner: String, now: Date) async throws {
        try await database.write(.bookkeeping) { [self] connection in
            let time = now.milliseconds
            for work in unsendable.sorted(by: { $0.notificationID < $1.notificationID }) {
                let id = work.notificationID
                let status = try await connection.query(sql.notificationStatus, [.text(id)]).first?.int(0)
                if let problem = work.notification, let status, status < NotificationState.finished.rawValue {
                    if problem == .expired {
                        // Not a fault: it ends done, its unsent devices failed as expired.
                        try await stop(id, reason: problem.reason, now: now, ending: false, on: connection)
                    } else {
                        logger.warning("a notification cannot be sent; stopping it", metadata: ["notification": "\(id)", "reason": "\(problem.reason)"])
                        try await stop(id, reason: problem.reason, now: now, on: connection)
                    }
                }
                if !work.deliveries.isEmpty {
                    let rows: [[SQLValue]] = work.deliveries.map { [.int($0.id), .text($0.reason)] }
                    let failed = try await connection.query(sql.failClaimed, [.text(owner), .int(time), .rows(rows)])
                    try await connection.query(sql.addCounts, [.int(0), .int(0), .int(failed.count), .text(id)])
                    if !webhookInterest.isEmpty, let app = try await connection.query(sql.notificationApp, [.text(id)]).first?.text(0) {
                        let reasons = Dictionary(work.deliveries.map { ($0.id, $0.reason) }, uniquingKeysWith: { first, _ in first })
                        let devices = failed.compactMap { row in row.text(1).map { FailedDevice(token: $0, state: .failed, reason: row.int(0).flatMap { reasons[$0] }, platform: PlatformCode.platform(row.int(2))) } }
                        try await recordFailures(app: app, notification: id, devices, now: now, on: connection)
                    }
                }
                if let number = work.segment {
                    try await connection.query(sql.endClaimedSegment, [.text(id), .int(number), .text(owner)])
                }
                if status != nil { try await finishIfDone(id, now: now, on: connection) }
            }
        }
    }
}
