import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Notifications: enqueue, read, cancel.
extension QueueEngine {
    /// - Parameters:
    ///   - deadline: no attempt after it: the APNs expiration's, or `now` plus `maximumAge`.
    ///   - maximumAge: without an APNs expiration, a scheduled notification's deadline counts
    ///     from the last time one of its devices may be due.
    func enqueue(
        _ request: NotificationRequest, id: String, deadline: Date, maximumAge: TimeInterval, now: Date
    ) async throws -> (notification: StoredNotification, created: Bool) {
        let result = try await database.write(.durable) { [self] connection in
            try await enqueue(request, id: id, deadline: deadline, maximumAge: maximumAge, now: now, on: connection)
        }
        if result.1 { database.work.signal() }
        return result
    }

    /// A pusher's device and its notification in one transaction, as the Matrix Push Gateway API
    /// takes them (one hop to the database a device, not three): the device as stored decides
    /// first. Retired and not set again since (`setAt`, the pusher's time, after its retirement):
    /// ``PusherOutcome/rejected``. New or changed: registered. Then `request`, if any, queued.
    func enqueue(
        _ request: NotificationRequest?, forPusher registration: DeviceRegistration, app: String, setAt: Date?, id: String, deadline: Date,
        maximumAge: TimeInterval, now: Date
    ) async throws -> PusherOutcome {
        let outcome = try await database.write(.durable) { [self] connection -> PusherOutcome in
            let existing = try await connection.query(sql.selectDevice, Self.device(registration.token, of: app)).first.map(Self.device)
            if let existing, existing.status != .active {
                // A retired device stays retired unless its pusher was set again after it was
                // retired (Apple's rule for a token registered again, by the pusher's time).
                let retiredAt = existing.invalidatedAt ?? existing.updatedAt
                guard let setAt, setAt > retiredAt else { return .rejected }
                try await upsert([registration], app: app, now: now, on: connection)
            } else if existing == nil || existing?.address != registration.address {
                try await upsert([registration], app: app, now: now, on: connection)
            }
            guard let request else { return .registered }
            let (notification, created) = try await enqueue(request, id: id, deadline: deadline, maximumAge: maximumAge, now: now, on: connection)
            return .queued(notification: notification, created: created)
        }
        if case .queued(_, true) = outcome { database.work.signal() }
        return outcome
    }

    /// ``enqueue(_:id:deadline:maximumAge:now:)``'s transaction, on `connection`.
    func enqueue(
        _ request: NotificationRequest, id: String, deadline: Date, maximumAge: TimeInterval, now: Date, on connection: any SQLConnection
    ) async throws -> (StoredNotification, Bool) {
        let kind = try Self.kind(of: request)
        if let digest = request.content?.digest {
            guard case .users = request.audience else {
                throw StoreError(.invalidInput, "digest: folds notifications per user; send it to users ({\"users\": […]})")
            }
            // Its window ends before the notification's deadline (its expiration, or the queue's
            // maximum age): the holder is sent when it ends.
            let left = deadline.timeIntervalSince(now)
            guard digest.windowSeconds >= 1, Double(digest.windowSeconds) < left else {
                throw StoreError(
                    .invalidInput,
                    "digest.windowSeconds: must be 1 to \(max(1, Int(left.rounded(.up)) - 1)): the window ends before the notification expires (its expiration, or the queue's maximum age)")
            }
            guard !digest.key.isEmpty, digest.key.utf8.count <= DigestRequest.maximumKeyLength, PeerText.isSafe(digest.key) else {
                throw StoreError(.invalidInput, "digest.key: must be 1 to \(DigestRequest.maximumKeyLength) printable characters")
            }
            if let item = digest.item, item.utf8.count > DigestRequest.maximumItemLength || !PeerText.isSafe(item) {
                throw StoreError(.invalidInput, "digest.item: must be at most \(DigestRequest.maximumItemLength) printable characters")
            }
        }
        // A Live Activity start's activity type, the last parameter where there is one.
        let activityType: [SQLValue] = request.activityType.map { [.text($0)] } ?? []
        let typed = request.activityType != nil
        do {
            if let existing = try await existing(request, on: connection) { return (existing, false) }
            let time = now.milliseconds
            var targeted = 0
            var deliveries: [PlannedDelivery] = []
            switch request.audience {
            case .tokens(let tokens):
                deliveries = try await explicitDeliveries(
                    Array(Set(tokens)).sorted(), kind: kind, activityType: request.activityType, app: request.app, on: connection
                )
            case .users(let users):
                for part in Self.chunks(users) {
                    let rows = try await connection.query(sql.devicesOfUsers(activityType: typed), [.text(request.app), .texts(part), .code(kind)] + activityType)
                    deliveries += rows.compactMap { row in
                        row.text(0).map { PlannedDelivery(token: $0, state: .pending, environment: row.int(1), platform: row.int(2), user: row.text(3)) }
                    }
                }
            case .tags(let tags):
                targeted = try await connection.query(sql.countTagged(activityType: typed), [.text(request.app), .texts(tags), .code(kind)] + activityType).first?.int(0, default: 0) ?? 0
            case .all:
                targeted = try await connection.query(sql.countActive(activityType: typed), [.text(request.app), .code(kind)] + activityType).first?.int(0, default: 0) ?? 0
            case .activity(let activityID):
                guard let tokens = try await activityDeliveries(request, activityID: activityID, now: now, on: connection) else {
                    // Ended: by this very request sent again with its key (which gets the first
                    // answer), or before it.
                    if let existing = try await existing(request, on: connection) { return (existing, false) }
                    throw Self.ended(activityID)
                }
                deliveries = tokens
            }
            if !request.audience.isRange { targeted = deliveries.count }
            // When each device may be sent (``DeliverySchedule``): a paced window reserved after
            // the app's earlier ones, a deadline counted from the last device's time, and each
            // listed device's time; a broadcast's devices are timed as its ranges are read.
            var schedule = request.schedule
            var deadline = deadline
            var due: [String: Int64] = [:]
            if var planned = schedule {
                let start = planned.start(now: now)
                planned.sendAt = start
                if let rate = planned.ratePerSecond, rate > 0 {
                    planned.pacedCount = request.audience.isRange ? targeted : deliveries.filter { $0.state == .pending }.count
                    planned.pacedFrom = planned.sharesAppPace
                        ? try await reservePace(app: request.app, from: start, for: Double(planned.pacedCount) / rate, on: connection) : start
                }
                if request.expiration == nil { deadline = planned.latestDue(now: now, count: planned.pacedCount).addingTimeInterval(maximumAge) }
                if !request.audience.isRange {
                    due = try await dueTimes(deliveries.filter { $0.state == .pending }.map(\.token), schedule: planned, deadline: deadline, app: request.app, now: now, on: connection)
                }
                schedule = planned
            }
            let audience = AudienceKind.encode(request.audience)
            let content = StoredContent.encode(request.content)
            let inserted = try await connection.query(sql.insertNotification, [
                .text(id), .text(request.app), .code(audience.kind), .text(audience.values), .blob(request.payload),
                .text(request.pushType.rawValue), .int(request.priority.map { Int64($0.rawValue) }),
                .int(request.expiration.map { Int64($0.unixSeconds) }), .text(request.collapseID), .code(BadgeCode(request.badge)),
                .text(request.idempotencyKey), .int(targeted), .int(deadline.milliseconds), .int(time), .text(request.activityType),
                .text(PlatformOptions.encode(request.platformOptions)),
                schedule.map { .text($0.stored) } ?? .null, .text(content.content), .text(content.template),
            ])
            if inserted.isEmpty, let existing = try await existing(request, on: connection) { return (existing, false) }
            try await appendEvents(app: request.app, [(.queued, Self.eventData { writer in
                writer.key("notification")
                writer.string(id)
                writer.key("pushType")
                writer.string(request.pushType.rawValue)
                writer.key("targeted")
                writer.int(targeted)
            })], now: now, on: connection)
            // A digest (once the notification is stored: a second request with its idempotency key
            // folds nothing): the users whose open digest takes this notification have their devices
            // end digested; the others' are due when the digest they now hold closes.
            var digestDue: [String: Int64] = [:]
            var digested = 0
            if let digest = request.content?.digest {
                let users = deliveries.compactMap { $0.state == .pending ? $0.user : nil }
                let (folded, opened) = try await foldDigests(digest, users: users, notification: id, app: request.app, now: now, on: connection)
                for index in deliveries.indices where deliveries[index].state == .pending {
                    guard let user = deliveries[index].user else { continue }
                    if folded.contains(user) {
                        deliveries[index].state = .digested
                        digested += 1
                    } else if let closes = opened[user] {
                        digestDue[deliveries[index].token] = closes
                    }
                }
            }
            for (token, closes) in digestDue { due[token] = max(due[token] ?? 0, min(closes, deadline.milliseconds)) }
            for part in Self.chunks(deliveries) {
                let rows: [[SQLValue]] = part.map { [.text($0.token), .code($0.state), .text($0.reason), .int($0.environment), .int(due[$0.token]), .int($0.platform ?? 0)] }
                try await connection.query(sql.insertDeliveries, [.text(id), .int(time), .rows(rows)])
            }
            if digested > 0 { try await addSkips([.digested: digested], to: id, on: connection) }
            // Devices the store already knows are gone are rejected with the reason on record.
            let known = Dictionary(grouping: deliveries.filter { $0.state == .rejected }, by: { $0.reason ?? "" }).mapValues(\.count)
            if !known.isEmpty {
                try await connection.query(sql.addReasons, [.text(id), .rows(known.sorted { $0.key < $1.key }.map { [.text($0.key), .int($0.value)] })])
                try await connection.query(sql.addCounts, [.int(0), .int(known.values.reduce(0, +)), .int(0), .text(id)])
                let rejected = deliveries.filter { $0.state == .rejected }.map { FailedDevice(token: $0.token, state: .rejected, reason: $0.reason, platform: PlatformCode.platform($0.platform)) }
                try await recordFailures(app: request.app, notification: id, rejected, now: now, on: connection)
            }
            if request.audience.isRange {
                let ranges = KeySpace.ranges(count: KeySpace.rangeCount(devices: targeted))
                // A range is read from its first device's time: at the start, or its turn in a pace
                // (0, at once, without a schedule).
                let rows: [[SQLValue]] = ranges.enumerated().map { range in
                    let ready = schedule.map { min($0.rangeReady(lower: range.element.lower, now: now), deadline).milliseconds } ?? 0
                    return [.int(range.offset), .int(range.element.lower), .int(range.element.upper), .int(ready)]
                }
                for part in Self.chunks(rows) { try await connection.query(sql.insertSegments, [.text(id), .int(time), .rows(Array(part))]) }
            }
            try await finishIfDone(id, now: now, on: connection)
            try await database.announceWork(on: connection)
            try await recordMinute(app: request.app, accepted: 0, rejected: known.values.reduce(0, +), failed: 0, now: now, on: connection)
            let stored = try await connection.query(sql.selectNotification, [.text(id)])
            return (try await notification(stored[0], on: connection), true)
        }
    }

    /// When each of `tokens` may be sent (milliseconds; none for those due now), no later than
    /// `deadline`: a device due after it is found at the deadline, and fails as expired.
    func dueTimes(
        _ tokens: [String], schedule: DeliverySchedule, deadline: Date, app: String, now: Date, on connection: any SQLConnection
    ) async throws -> [String: Int64] {
        guard schedule.timesEachDevice || (schedule.sendAt ?? now) > now else { return [:] }
        let zones = schedule.needsTimeZones ? try await timeZones(of: tokens, app: app, on: connection) : [:]
        var due: [String: Int64] = [:]
        due.reserveCapacity(tokens.count)
        for (index, token) in tokens.enumerated() {
            let time = schedule.due(timeZone: zones[token], position: Double(index), now: now)
            if time > now { due[token] = min(time, deadline).milliseconds }
        }
        return due
    }

    /// The time zones of those of `tokens` (devices of `app`) that registered one.
    func timeZones(of tokens: [String], app: String, on connection: any SQLConnection) async throws -> [String: String] {
        var zones: [String: String] = [:]
        for part in Self.chunks(tokens) {
            for row in try await connection.query(sql.timeZonesOf, [.text(app), .devices(part)]) {
                if let token = row.text(0), let zone = row.text(1) { zones[token] = zone }
            }
        }
        return zones
    }

    /// Reserves `seconds` of app `app`'s paced sending from `start` on (or from where its last
    /// reservation ends, if later) and returns where the reservation starts. The app's row is
    /// locked until the enqueue commits, so processes sharing PostgreSQL reserve one after another.
    private func reservePace(app: String, from start: Date, for seconds: Double, on connection: any SQLConnection) async throws -> Date {
        // The row exists before it is locked: two first reservations at once must not both find none.
        try await connection.query(sql.insertAppPace, [.text(app)])
        let free = try await connection.query(sql.appPace, [.text(app)]).first?.int(0).map(Date.init(milliseconds:))
        let from = max(start, free ?? start)
        try await connection.query(sql.setAppPace, [.text(app), .int(from.addingTimeInterval(seconds).milliseconds)])
        return from
    }

    /// The notification already stored with the request's idempotency key, if any.
    private func existing(_ request: NotificationRequest, on connection: any SQLConnection) async throws -> StoredNotification? {
        guard let key = request.idempotencyKey,
            let row = try await connection.query(sql.selectByIdempotencyKey, [.text(request.app), .text(key)]).first
        else { return nil }
        return try await notification(row, on: connection)
    }

    /// The kind of token a request goes to: `mdm` goes to no app token; a Live Activity push
    /// goes to one activity's update tokens, or starts one on push-to-start tokens of one type.
    static func kind(of request: NotificationRequest) throws(StoreError) -> KindCode {
        let kind = try Self.kind(of: request.pushType)
        switch request.audience {
        case .activity:
            guard kind == .liveactivity, request.activityType == nil else {
                throw StoreError(.invalidInput, "an event to a Live Activity's update tokens is a liveactivity push without an activity type")
            }
        default:
            guard (kind == .liveactivity) == (request.activityType != nil) else {
                throw StoreError(.invalidInput, "activityType: a Live Activity start names the attributes type of its push-to-start tokens; other pushes have none")
            }
            guard request.endsActivityUntil == nil else { throw StoreError(.invalidInput, "only an event to a Live Activity ends one") }
        }
        return kind
    }

    /// The kind of token a push type goes to: `mdm` goes to no app token.
    static func kind(of pushType: PushType) throws(StoreError) -> KindCode {
        guard let kind = TokenKind(for: pushType) else {
            throw StoreError(.invalidInput, "pushType: mdm pushes go to an MDM enrolment's topic, not to an app's device tokens")
        }
        return KindCode(kind)
    }

    /// One delivery row per token: pending, or rejected at once when the store knows the device is
    /// gone, or is a token of another kind than the push type goes to.
    private func explicitDeliveries(
        _ tokens: [String], kind: KindCode, activityType: String?, app: String, on connection: any SQLConnection
    ) async throws -> [PlannedDelivery] {
        var known: [String: (status: DeviceCode?, reason: String?, kind: KindCode?, environment: Int64?, activityType: String?, platform: Int64?)] = [:]
        for part in Self.chunks(tokens) {
            for row in try await connection.query(sql.knownDevices, [.text(app), .devices(part)]) {
                known[row.text(0) ?? ""] = (DeviceCode(code: row.int(1)), row.text(2), KindCode(code: row.int(3)), row.int(4), row.text(5), row.int(6))
            }
        }
        return tokens.map { token in
            // A token the store does not know is sent as asked, in the app's environment: an APNs
            // token (a browser or an Android device is known by the address it registered with).
            guard let device = known[token] else { return PlannedDelivery(token: token, state: .pending) }
            func planned(_ state: DeliveryState, _ reason: String? = nil) -> PlannedDelivery {
                PlannedDelivery(token: token, state: state, reason: reason, environment: device.environment, platform: device.platform)
            }
            if device.kind != kind { return planned(.rejected, DeliveryReason.gateway(.tokenKindMismatch).description) }
            if device.activityType != activityType { return planned(.rejected, DeliveryReason.gateway(.activityTypeMismatch).description) }
            guard device.status != .active else { return planned(.pending) }
            return planned(.rejected, device.reason ?? "Unregistered")
        }
    }

    func notification(id: String) async throws -> StoredNotification? {
        try await database.read { [self] connection in
            guard let row = try await connection.query(sql.selectNotification, [.text(id)]).first else { return nil }
            return try await notification(row, on: connection)
        }
    }

    /// A page of an app's notifications, newest first; `after` is the previous page's `next`.
    func notifications(app: String, status: NotificationStatus?, limit: Int, after: String?) async throws -> Page<StoredNotification> {
        try await database.read { [self] connection in
            // IDs are lower-case hex and dashes: "~" sorts after every one.
            var binds: [SQLValue] = [.text(app), .text(after ?? "~"), .int(limit + 1)]
            if let status { binds.append(.code(NotificationState(status))) }
            var rows = try await connection.query(sql.listNotifications(status: status != nil), binds)
            let more = rows.count > limit
            if more { rows.removeLast() }
            // The rejection counts of the whole page in one query, not one per notification.
            var reasons: [String: [String: Int]] = [:]
            var platforms: [String: [DevicePlatform: PlatformCounts]] = [:]
            let ids = rows.compactMap { $0.text(NotificationColumn.id) }
            if !ids.isEmpty {
                for row in try await connection.query(sql.selectReasonsOf, [.texts(ids)]) {
                    reasons[row.text(0) ?? "", default: [:]][row.text(1) ?? ""] = row.int(2, default: 0)
                }
                platforms = try await platformCounts(of: ids, on: connection)
            }
            let notifications = rows.map { row in
                let id = row.text(NotificationColumn.id) ?? ""
                return Self.notification(row, rejected: reasons[id] ?? [:], byPlatform: platforms[id] ?? [:])
            }
            return Page(items: notifications, next: more ? notifications.last?.id : nil)
        }
    }

    /// A notification from a row of ``QueueStatements/notificationColumns``, with its rejection
    /// counts and its counts per platform.
    func notification(_ row: SQLRow, on connection: any SQLConnection) async throws -> StoredNotification {
        let id = row.text(NotificationColumn.id) ?? ""
        var rejected: [String: Int] = [:]
        for reason in try await connection.query(sql.selectReasons, [.text(id)]) {
            rejected[reason.text(0) ?? ""] = reason.int(1, default: 0)
        }
        return Self.notification(row, rejected: rejected, byPlatform: try await platformCounts(of: [id], on: connection)[id] ?? [:])
    }

    /// The counts per platform of the notifications `ids`, by notification ID (a platform Herald
    /// does not know, written by a newer one, is left out).
    func platformCounts(of ids: [String], on connection: any SQLConnection) async throws -> [String: [DevicePlatform: PlatformCounts]] {
        var counts: [String: [DevicePlatform: PlatformCounts]] = [:]
        for row in try await connection.query(sql.selectPlatformCountsOf, [.texts(ids)]) {
            guard let platform = PlatformCode(code: row.int(1))?.platform else { continue }
            counts[row.text(0) ?? "", default: [:]][platform] = PlatformCounts(
                accepted: row.int(2, default: 0), rejected: row.int(3, default: 0), failed: row.int(4, default: 0))
        }
        return counts
    }

    static func notification(_ row: SQLRow, rejected: [String: Int], byPlatform: [DevicePlatform: PlatformCounts]) -> StoredNotification {
        typealias Column = NotificationColumn
        var request = NotificationRequest(
            app: row.text(Column.app) ?? "",
            audience: (AudienceKind(code: row.int(Column.audienceKind)) ?? .all).audience(row.text(Column.audience) ?? ""),
            payload: row.blob(Column.payload) ?? [],
            pushType: PushType(rawValue: row.text(Column.pushType) ?? "alert") ?? .alert,
            priority: row.int(Column.priority).flatMap { Int(exactly: $0) }.flatMap(PushPriority.init(rawValue:)),
            expiration: row.int(Column.expiration).flatMap { Int(exactly: $0) }.flatMap { try? PushExpiration(unixSeconds: $0) },
            collapseID: row.text(Column.collapseID),
            badge: BadgeCode(code: row.int(Column.badgeMode))?.mode ?? .none,
            idempotencyKey: row.text(Column.idempotencyKey),
            activityType: row.text(Column.activityType)
        )
        request.platformOptions = PlatformOptions.decode(row.text(Column.platformOptions))
        request.schedule = DeliverySchedule(stored: row.text(Column.schedule))
        request.content = StoredContent.decode(row.text(Column.content))
        return StoredNotification(
            id: row.text(Column.id) ?? "", request: request, status: NotificationState(code: row.int(Column.status))?.status ?? .queued,
            counts: NotificationCounts(
                targeted: row.int(Column.targeted, default: 0), accepted: row.int(Column.accepted, default: 0), rejected: rejected,
                failed: row.int(Column.failed, default: 0), byPlatform: byPlatform,
                skipped: Self.skipped(optedOut: row.int(Column.optedOut, default: 0), capped: row.int(Column.capped, default: 0), digested: row.int(Column.digested, default: 0))
            ),
            createdAt: Date(milliseconds: row.int(Column.createdAt) ?? 0),
            finishedAt: row.int(Column.finishedAt).map(Date.init(milliseconds:))
        )
    }

    /// Skipped counts, without the reasons no device had.
    static func skipped(optedOut: Int, capped: Int, digested: Int) -> [SkipReason: Int] {
        var skipped: [SkipReason: Int] = [:]
        if optedOut > 0 { skipped[.optedOut] = optedOut }
        if capped > 0 { skipped[.capped] = capped }
        if digested > 0 { skipped[.digested] = digested }
        return skipped
    }

    func deliveries(notificationID: String, outcome: DeliveryRecord.Outcome?, limit: Int, after: String?) async throws -> Page<DeliveryRecord> {
        try await database.read { [self] connection in
            var binds: [SQLValue] = [.text(notificationID), .text(after ?? ""), .int(limit + 1)]
            if let outcome { binds.append(.code(DeliveryState(outcome))) }
            var records = try await connection.query(sql.listDeliveries(outcome: outcome != nil), binds).compactMap { row -> DeliveryRecord? in
                guard let outcome = DeliveryState(code: row.int(1))?.outcome else { return nil }
                return DeliveryRecord(
                    token: row.text(0) ?? "", outcome: outcome, reason: row.text(2), receipt: row.text(3), uniqueID: row.text(5),
                    at: Date(milliseconds: row.int(4) ?? 0)
                )
            }
            let more = records.count > limit
            if more { records.removeLast() }
            return Page(items: records, next: more ? records.last?.token : nil)
        }
    }

    func cancel(id: String, now: Date) async throws -> StoredNotification? {
        try await database.write(.durable) { [self] connection in
            let unsent = try await stop(id, reason: Unsendable.cancelled.reason, now: now, on: connection)
            guard let row = try await connection.query(sql.selectNotification, [.text(id)]).first else { return nil }
            let cancelled = try await notification(row, on: connection)
            try await recordMinute(app: cancelled.request.app, accepted: 0, rejected: 0, failed: unsent, now: now, on: connection)
            return cancelled
        }
    }

    /// Cancels a notification still queued or sending: its unsent deliveries fail with `reason`
    /// and its unread ranges end. Its row is locked first, then its deliveries and ranges, as a
    /// completion locks them; a claim's rows are skipped (``QueueStatements/cancelDeliveries``).
    /// Returns how many deliveries it failed. `ending` false: the notification is not marked
    /// cancelled (its deadline passed: it finishes as done once nothing of it is in flight).
    @discardableResult
    func stop(_ id: String, reason: String, now: Date, ending: Bool = true, on connection: any SQLConnection) async throws -> Int {
        let time = now.milliseconds
        if ending {
            guard try await !connection.query(sql.stopNotification, [.int(time), .text(id)]).isEmpty else { return 0 }
        }
        let stopped = try await connection.query(sql.cancelDeliveries, [.int(time), .text(id), .text(reason)])
        let unsent = stopped.count
        try await connection.query(sql.addCounts, [.int(0), .int(0), .int(unsent), .text(id)])
        try await connection.query(sql.cancelSegments, [.text(id)])
        // A deadline that passed fails its devices (`delivery.failed`); a cancel reports none.
        if !ending, !stopped.isEmpty, !webhookInterest.isEmpty, let app = try await connection.query(sql.notificationApp, [.text(id)]).first?.text(0) {
            let devices = stopped.compactMap { row in row.text(1).map { FailedDevice(token: $0, state: .failed, reason: reason, platform: PlatformCode.platform(row.int(2))) } }
            try await recordFailures(app: app, notification: id, devices, now: now, on: connection)
        }
        return unsent
    }

    /// How many deliveries and ranges of a notification a worker holds a live lease on.
    func leasedWork(notificationID: String, now: Date) async throws -> Int {
        try await database.read { [self] connection in
            try await connection.query(sql.leasedWork, [.text(notificationID), .int(now.milliseconds)]).first?.int(0, default: 0) ?? 0
        }
    }
}

/// A delivery row a notification is queued with: one of its devices, pending or rejected at once.
struct PlannedDelivery: Sendable {
    var token: String
    var state: DeliveryState
    var reason: String? = nil
    /// ``EnvironmentCode``; `nil`: the app's.
    var environment: Int64? = nil
    /// ``PlatformCode``; `nil`: APNs.
    var platform: Int64? = nil
    /// The device's user, for a notification to users.
    var user: String? = nil
}
