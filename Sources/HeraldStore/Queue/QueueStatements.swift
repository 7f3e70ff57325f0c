import HeraldCore
/// Every statement of the queue engine, written once: parameters are `$1`, `$2`…, codes come
/// from ``StoredCode`` types, and what the two databases spell differently comes from the
/// dialect. Lists and rows travel as one JSON array parameter each.
struct QueueStatements: Sendable {
    let d: any SQLDialect

    /// Element `index` of a JSON row `j`.
    private func e(_ index: Int, _ type: SQLType, _ row: String = "j") -> String { d.element(row, index, type) }

    // MARK: Devices

    static let deviceColumns = DeviceColumn.selectList

    /// Device $2 (its key $3) of app $1. A device is found by its hash as well as its token: SQLite
    /// keeps devices in key order (``SQLDialect/deviceKey``); PostgreSQL finds it by token.
    var selectDevice: String { "SELECT \(Self.deviceColumns) FROM devices WHERE app = $1 AND hash = $3 AND token = $2" }

    /// Upserts devices of app $1 given as rows `[token, user, tags, badge, hash, kind, activity
    /// type, environment, Web Push subscription, FCM registration token, time zone, locale,
    /// preferences]` ($2) at $3: a null user, tags, badge, environment, address, time zone, locale
    /// or preferences keeps what is stored (a cleared user, locale or preferences is "");
    /// registering makes the device active again. A hash is the token's, never updated; so is
    /// its platform, which the address it first registered with says (an ID is one platform's). A new
    /// device without a kind is an alert token; `settingKind`: the rows' kinds (and activity
    /// types) replace those stored, otherwise stored kinds are kept.
    func upsertDevices(settingKind: Bool) -> String {
        """
        INSERT INTO devices (app, token, user_id, tags, badge, hash, kind, activity_type, environment, address, platform, time_zone, locale,
            preferences, status, created_at, updated_at)
        SELECT $1, \(e(0, .text)), \(e(1, .text)), \(e(2, .text)), \(e(3, .integer)), \(e(4, .bigint)),
            COALESCE(\(e(5, .smallint)), \(KindCode.alert)), \(e(6, .text)), \(e(7, .smallint)), \(e(8, .text)),
            COALESCE(\(e(9, .smallint)), \(PlatformCode(.apns))), \(e(10, .text)), \(e(11, .text)), \(e(12, .text)),
            \(DeviceCode.active), $3, $3
        FROM \(d.rows(2)) AS j WHERE true
        ON CONFLICT \(d.deviceKey) DO UPDATE SET
            user_id = COALESCE(excluded.user_id, devices.user_id),
            tags = COALESCE(excluded.tags, devices.tags),
            badge = COALESCE(excluded.badge, devices.badge),
            environment = COALESCE(excluded.environment, devices.environment),
            address = COALESCE(excluded.address, devices.address),
            time_zone = COALESCE(excluded.time_zone, devices.time_zone),
            locale = COALESCE(excluded.locale, devices.locale),
            preferences = COALESCE(excluded.preferences, devices.preferences),\(settingKind ? "\n    kind = excluded.kind, activity_type = excluded.activity_type," : "")
            status = \(DeviceCode.active), reason = NULL, invalidated_at = NULL,
            updated_at = excluded.updated_at
        """
    }
    /// As ``upsertDevices``, for devices registered with their token alone (rows `[token, hash]`,
    /// $2): what a bulk import of tokens mostly is, two elements a row to read rather than five.
    var upsertBareDevices: String {
        """
        INSERT INTO devices (app, token, hash, kind, status, created_at, updated_at)
        SELECT $1, \(e(0, .text)), \(e(1, .bigint)), \(KindCode.alert), \(DeviceCode.active), $3, $3
        FROM \(d.rows(2)) AS j WHERE true
        ON CONFLICT \(d.deviceKey) DO UPDATE SET
            status = \(DeviceCode.active), reason = NULL, invalidated_at = NULL, updated_at = excluded.updated_at
        """
    }
    /// The tags of the tokens $2 of app $1 go, before rows `[token, tag, key]` ($2) replace them.
    var deleteTags: String { "DELETE FROM device_tags WHERE app = $1 AND token IN (\(d.list(2, .text)))" }
    var insertTags: String {
        """
        INSERT INTO device_tags (app, tag, token, hash) SELECT $1, \(e(1, .text)), \(e(0, .text)), \(e(2, .bigint))
        FROM \(d.rows(2)) AS j WHERE true ON CONFLICT DO NOTHING
        """
    }
    var deleteDevice: String { "DELETE FROM devices WHERE app = $1 AND hash = $3 AND token = $2 RETURNING token" }
    var deleteDeviceTags: String { "DELETE FROM device_tags WHERE app = $1 AND token = $2" }

    /// Keyset pagination after token $2 ("": from the start), at most $3, optionally by status,
    /// user or tag, in the order the database keeps devices: by key (``SQLDialect/devicesInKeyOrder``:
    /// then $4 is $2's hash, -1 from the start) or by token.
    func listDevices(status: Bool, user: Bool, tag: Bool, kind: Bool, environment: Bool, platform: DevicePlatform? = nil) -> String {
        var sql = "SELECT \(DeviceColumn.selectList(of: "d")) FROM devices d"
        var next = d.devicesInKeyOrder ? 5 : 4
        var conditions = ""
        if tag {
            sql += " JOIN device_tags t ON t.app = d.app AND t.hash = d.hash AND t.token = d.token AND t.tag = $\(next)"
            next += 1
        }
        sql += d.devicesInKeyOrder ? " WHERE d.app = $1 AND (d.hash, d.token) > ($4, $2)" : " WHERE d.app = $1 AND d.token > $2"
        if status {
            conditions += " AND d.status = $\(next)"
            next += 1
        }
        if user {
            conditions += " AND d.user_id = $\(next)"
            next += 1
        }
        if kind {
            conditions += " AND d.kind = $\(next)"
            next += 1
        }
        // Devices registered without an environment count as the app's ($next + 1).
        if environment { conditions += " AND COALESCE(d.environment, $\(next + 1)) = $\(next)" }
        // Each device's stored platform, never its address columns.
        if let platform { conditions += " AND d.platform = \(PlatformCode(platform))" }
        sql += conditions
        return sql + (d.devicesInKeyOrder ? " ORDER BY d.hash, d.token LIMIT $3" : " ORDER BY d.token LIMIT $3")
    }

    func countDevices(status: Bool) -> String {
        "SELECT COUNT(*) FROM devices WHERE app = $1" + (status ? " AND status = $2" : "")
    }

    // Updates from rows of a JSON parameter read the rows from a MATERIALIZED common table
    // expression: SQLite then reads each row once and finds its device by key. Given the rows as a
    // subquery in FROM, it put the table first (it has `app = $1` to start from) and read every
    // row for every device: 5,000 unregistrations took 23.5 s, 0.055 s this way.

    /// `Unregistered` (rows `[token, reason, at, hash]`, $2): only if the device has not registered
    /// since APNs's timestamp (apns-spec §1.6).
    var unregisterDevices: String {
        """
        WITH r AS MATERIALIZED (
            SELECT \(e(0, .text)) AS r_token, \(e(1, .text)) AS r_reason, \(e(2, .bigint)) AS r_at, \(e(3, .bigint)) AS r_hash FROM \(d.rows(2)) AS j)
        UPDATE devices SET status = \(DeviceCode.unregistered), reason = r.r_reason, invalidated_at = r.r_at FROM r
        WHERE devices.app = $1 AND devices.hash = r.r_hash AND devices.token = r.r_token
            AND devices.status = \(DeviceCode.active) AND devices.updated_at <= r.r_at
        RETURNING token, kind, platform
        """
    }
    /// `BadDeviceToken` and the like (rows `[token, reason, hash]`, $2): at once.
    var invalidateDevices: String {
        """
        WITH r AS MATERIALIZED (SELECT \(e(0, .text)) AS r_token, \(e(1, .text)) AS r_reason, \(e(2, .bigint)) AS r_hash FROM \(d.rows(2)) AS j)
        UPDATE devices SET status = \(DeviceCode.invalid), reason = r.r_reason FROM r
        WHERE devices.app = $1 AND devices.hash = r.r_hash AND devices.token = r.r_token AND devices.status = \(DeviceCode.active)
        RETURNING token, kind, platform
        """
    }

    // MARK: Notifications

    static let notificationColumns = NotificationColumn.selectList
    var selectNotification: String { "SELECT \(Self.notificationColumns) FROM notifications WHERE id = $1" }
    var selectByIdempotencyKey: String { "SELECT \(Self.notificationColumns) FROM notifications WHERE app = $1 AND idempotency_key = $2" }
    var selectReasons: String { "SELECT reason, count FROM notification_reasons WHERE notification_id = $1" }
    /// The counts per platform of the notifications $1 (``PlatformCode``).
    var selectPlatformCountsOf: String {
        "SELECT notification_id, platform, accepted, rejected, failed FROM notification_platforms WHERE notification_id IN (\(d.list(1, .text)))"
    }
    /// The rejection counts of the notifications $1.
    var selectReasonsOf: String { "SELECT notification_id, reason, count FROM notification_reasons WHERE notification_id IN (\(d.list(1, .text)))" }
    /// App $1's notifications before ID $2 (IDs sort by creation), newest first, at most $3,
    /// optionally in state $4.
    func listNotifications(status: Bool) -> String {
        "SELECT \(Self.notificationColumns) FROM notifications WHERE app = $1 AND id < $2\(status ? " AND status = $4" : "") ORDER BY id DESC LIMIT $3"
    }

    /// Callers enqueueing with one key at once wait here for the first to commit, then find
    /// nothing inserted and answer with its notification.
    var insertNotification: String {
        """
        INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, priority, expiration, collapse_id,
            badge_mode, idempotency_key, status, targeted, deadline, created_at, activity_type, platform_options, schedule, content, template)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \(NotificationState.queued), $12, $13, $14, $15, $16, $17, $18, $19)
        ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id
        """
    }
    // A notification reaches the devices of one kind and, for a Live Activity start, of one
    // activity type (`activityType` true: `activity_type = $n`, its last parameter). Only
    // push-to-start tokens have an activity type, and only a start goes to them, so every other
    // push needs no such condition, and has none: PostgreSQL estimated `COALESCE(activity_type,
    // '') = ''` to keep almost no rows and read a broadcast's range by a scan and a sort instead
    // of by the index (docs/performance.md, "Measurements behind the code").

    /// The earliest time after $1 a pending delivery or a broadcast's range falls due.
    var nextDue: String {
        """
        SELECT (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = \(DeliveryState.pending) AND next_attempt_at > $1),
            (SELECT MIN(ready_at) FROM segments WHERE state = \(SegmentState.pending) AND ready_at > $1)
        """
    }
    /// The time zones of app $1's devices among rows `[token, hash]` ($2) that have one.
    var timeZonesOf: String {
        "SELECT token, time_zone FROM devices WHERE app = $1 AND time_zone IS NOT NULL AND \(d.devices("devices", in: 2, hashAt: 1))"
    }
    var insertAppPace: String { "INSERT INTO app_pacing (app, next_free) VALUES ($1, 0) ON CONFLICT (app) DO NOTHING" }
    /// Where app $1's paced sending is reserved up to, its row locked until the transaction ends.
    var appPace: String { "SELECT next_free FROM app_pacing WHERE app = $1\(d.forUpdate)" }
    /// App $1's paced sending is reserved up to $2.
    var setAppPace: String {
        "INSERT INTO app_pacing (app, next_free) VALUES ($1, $2) ON CONFLICT (app) DO UPDATE SET next_free = excluded.next_free"
    }
    /// A broadcast's devices not yet due (their local time, quiet hours, their turn in a pace),
    /// kept as deliveries of notification $1 due then, rows `[token, due, badge, environment,
    /// platform]` ($2), not yet attempted.
    var deferRangeDevices: String {
        """
        INSERT INTO deliveries (notification_id, token, state, attempts, next_attempt_at, badge, environment, platform)
        SELECT $1, \(e(0, .text)), \(DeliveryState.pending), 0, \(e(1, .bigint)), \(e(2, .integer)), \(e(3, .smallint)), \(e(4, .smallint)) FROM \(d.rows(2)) AS j
        WHERE true ON CONFLICT (notification_id, token) DO NOTHING
        """
    }

    /// The addresses of `platform` of app $1's devices among rows `[token, hash]` ($2).
    func addresses(_ platform: DevicePlatform) -> String {
        "SELECT token, address FROM devices WHERE app = $1 AND platform = \(PlatformCode(platform)) AND address IS NOT NULL AND \(d.devices("devices", in: 2, hashAt: 1))"
    }

    /// The devices of app $1 among rows `[token, hash]` ($2).
    var knownDevices: String {
        "SELECT token, status, reason, kind, environment, activity_type, platform FROM devices WHERE app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))"
    }
    /// The active devices of kind $3 (and activity type $4) of app $1's users $2.
    func devicesOfUsers(activityType: Bool) -> String {
        """
        SELECT token, environment, platform, user_id FROM devices WHERE app = $1 AND status = \(DeviceCode.active) AND kind = $3\(activityType ? " AND activity_type = $4" : "")
            AND user_id IN (\(d.list(2, .text))) ORDER BY token
        """
    }
    /// The active devices of kind $3 (and activity type $4) of app $1 with any of the tags $2.
    func countTagged(activityType: Bool) -> String {
        """
        SELECT COUNT(DISTINCT t.token) FROM device_tags t JOIN devices d ON d.app = t.app AND d.hash = t.hash AND d.token = t.token
        WHERE t.app = $1 AND t.tag IN (\(d.list(2, .text))) AND d.status = \(DeviceCode.active) AND d.kind = $3\(activityType ? " AND d.activity_type = $4" : "")
        """
    }
    /// The active devices of kind $2 (and activity type $3) of app $1.
    func countActive(activityType: Bool) -> String {
        "SELECT COUNT(*) FROM devices WHERE app = $1 AND status = \(DeviceCode.active) AND kind = $2" + (activityType ? " AND activity_type = $3" : "")
    }

    /// Deliveries of notification $1 at $2, rows `[token, state, reason, environment, due,
    /// platform]` ($3): a null due is $2.
    var insertDeliveries: String {
        """
        INSERT INTO deliveries (notification_id, token, state, next_attempt_at, reason, finished_at, environment, platform)
        SELECT $1, o_token, o_state, COALESCE(o_due, $2), o_reason, CASE WHEN o_state = \(DeliveryState.pending) THEN NULL ELSE $2 END, o_environment, o_platform
        FROM (SELECT \(e(0, .text)) AS o_token, \(e(1, .smallint)) AS o_state, \(e(2, .text)) AS o_reason, \(e(3, .smallint)) AS o_environment,
            \(e(4, .bigint)) AS o_due, \(e(5, .smallint)) AS o_platform FROM \(d.rows(3)) AS j) AS o
        WHERE true ON CONFLICT DO NOTHING
        """
    }
    /// Rejection counts of notification $1, rows `[reason, count]` ($2).
    var addReasons: String {
        """
        INSERT INTO notification_reasons (notification_id, reason, count)
        SELECT $1, \(e(0, .text)), \(e(1, .bigint)) FROM \(d.rows(2)) AS j WHERE true
        ON CONFLICT (notification_id, reason) DO UPDATE SET count = notification_reasons.count + excluded.count
        """
    }
    var addSkips: String { "UPDATE notifications SET opted_out = opted_out + $1, capped = capped + $2, digested = digested + $3 WHERE id = $4" }
    var addCounts: String { "UPDATE notifications SET accepted = accepted + $1, rejected = rejected + $2, failed = failed + $3 WHERE id = $4" }
    /// A broadcast's key ranges, rows `[number, lower, upper, ready]` ($3): none is read before its ready time.
    var insertSegments: String {
        """
        INSERT INTO segments (notification_id, number, lower_hash, upper_hash, cursor_hash, cursor, state, created_at, ready_at)
        SELECT $1, \(e(0, .integer)), \(e(1, .bigint)), \(e(2, .bigint)), -1, '', \(SegmentState.pending), $2, \(e(3, .bigint)) FROM \(d.rows(3)) AS j WHERE true
        """
    }

    func listDeliveries(outcome: Bool) -> String {
        "SELECT token, state, reason, apns_id, finished_at, unique_id FROM deliveries WHERE notification_id = $1 AND token > $2"
            + (outcome ? " AND state = $4" : " AND state >= \(DeliveryState.finished)") + " ORDER BY token LIMIT $3"
    }

    var stopNotification: String {
        "UPDATE notifications SET status = \(NotificationState.cancelled), finished_at = $1 WHERE id = $2 AND status < \(NotificationState.finished) RETURNING id"
    }
    /// Stops notification $2's unsent deliveries with reason $3 at $1. Rows a claim holds at that
    /// moment are skipped, not waited for: they are in flight (and what is in flight finishes),
    /// and a cancel that waited for a claim while holding the notification's row, which the
    /// claim then waits for, would deadlock.
    var cancelDeliveries: String {
        """
        UPDATE deliveries SET state = \(DeliveryState.failed), reason = $3, finished_at = $1, lease_owner = NULL
        WHERE id IN (SELECT id FROM deliveries WHERE notification_id = $2 AND state = \(DeliveryState.pending)\(d.skipLocked(of: nil)))
        RETURNING id, token, platform
        """
    }
    var cancelSegments: String {
        """
        UPDATE segments SET state = \(SegmentState.done)
        WHERE notification_id = $1 AND number IN (
            SELECT number FROM segments WHERE notification_id = $1 AND state = \(SegmentState.pending)\(d.skipLocked(of: nil)))
        """
    }
    var leasedWork: String {
        """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = $1 AND state = \(DeliveryState.claimed) AND lease_expires_at > $2)
            + (SELECT COUNT(*) FROM segments WHERE notification_id = $1 AND state = \(SegmentState.claimed) AND lease_expires_at > $2)
        """
    }
    var unfinishedWork: String {
        """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = $1 AND state < \(DeliveryState.finished))
            + (SELECT COUNT(*) FROM segments WHERE notification_id = $1 AND state < \(SegmentState.done))
        """
    }
    /// Done: a broadcast's count becomes exact.
    var finishNotification: String {
        """
        UPDATE notifications SET status = \(NotificationState.done), finished_at = $1,
            targeted = CASE WHEN audience_kind >= \(AudienceKind.tags) THEN accepted + rejected + failed + opted_out + capped + digested ELSE targeted END
        WHERE id = $2 AND status < \(NotificationState.finished)
        RETURNING app
        """
    }
    var notificationStatus: String { "SELECT status FROM notifications WHERE id = $1\(d.forUpdate)" }

    // MARK: Claims

    /// Up to $4 deliveries, leased to $1 until $2: first those whose lease ran out ($3), oldest
    /// first, then those due at $3, oldest first. Rows another worker is claiming are skipped,
    /// not waited for. One statement, not one for each kind: a claim is a round trip fewer.
    /// (Rows of the second kind that the limit leaves out stay locked until the claim commits:
    /// other claims skip them meanwhile.)
    var claimDeliveries: String {
        """
        UPDATE deliveries SET state = \(DeliveryState.claimed), lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1
        WHERE id IN (SELECT id FROM (
            SELECT id, 0 AS kind, lease_expires_at AS due FROM (SELECT id, lease_expires_at FROM deliveries
                WHERE state = \(DeliveryState.claimed) AND lease_expires_at <= $3 ORDER BY lease_expires_at, id LIMIT $4\(d.skipLocked(of: nil))) AS expired
            UNION ALL
            SELECT id, 1 AS kind, next_attempt_at AS due FROM (SELECT id, next_attempt_at FROM deliveries
                WHERE state = \(DeliveryState.pending) AND next_attempt_at <= $3 ORDER BY next_attempt_at, id LIMIT $4\(d.skipLocked(of: nil))) AS pending
            ) AS claimable ORDER BY kind, due, id LIMIT $4)
        RETURNING \(ClaimedColumn.selectList)
        """
    }

    /// What a worker needs of the notifications $1: each one's ID, then ``workColumns``.
    var notificationsForWork: String {
        "SELECT id, \(Self.workColumns(of: nil)) FROM notifications WHERE id IN (\(d.list(1, .text)))"
    }
    /// What a worker needs of a notification, after its ID (``QueueEngine`` reads them in this order).
    static func workColumns(of table: String?) -> String {
        table.map(WorkColumn.selectList(of:)) ?? WorkColumn.selectList
    }

    /// `names` as a select list, each qualified by `table` when there is one.
    private static func columns(_ names: [String], of table: String?) -> String {
        let prefix = table.map { "\($0)." } ?? ""
        return names.map { prefix + $0 }.joined(separator: ", ")
    }

    /// Locks the devices (rows `[app, token]`, $1) of a claim in one order, before their badges
    /// are raised a notification at a time: two claims raising the same devices never wait for
    /// each other.
    var lockDevices: String {
        """
        SELECT 1 FROM devices WHERE (app, token) IN (SELECT \(e(0, .text)), \(e(1, .text)) FROM \(d.rows(1)) AS j)
        ORDER BY app, token\(d.forUpdate)
        """
    }

    /// A device's stored badge (none: 0) brought into 0...`maximum`, as an integer whatever was
    /// written into the column.
    func badgeInRange(maximum: Int) -> String {
        "CAST(\(d.least(d.greatest("COALESCE(badge, 0)", "0"), String(maximum))) AS INTEGER)"
    }

    /// Raises the badges of app $1's devices (rows `[token, hash]`, $2) by one, only those after ($3, $4) in key order
    /// unless $3 is NULL. A badge stops at the largest APNs accepts (one more would overflow the
    /// column and fail the claim). Each claim raises a device once per delivery row (which keeps
    /// the raised badge) or range (which keeps how far it raised), so a notification claimed
    /// after a later one still raises, and a re-claim after a lease ran out does not.
    var raiseBadges: String {
        """
        UPDATE devices SET badge = \(badgeInRange(maximum: DeviceRegistration.maximumBadge - 1)) + 1
        WHERE app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))
            AND (\(d.parameter(3, .bigint)) IS NULL OR (hash, token) > (\(d.parameter(3, .bigint)), \(d.parameter(4, .text))))
        """
    }
    var selectBadges: String {
        "SELECT token, \(badgeInRange(maximum: DeviceRegistration.maximumBadge)) FROM devices WHERE app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))"
    }
    /// The badges raised for notification $1's deliveries, rows `[token, badge]` ($2).
    var setDeliveryBadges: String {
        """
        WITH b AS MATERIALIZED (SELECT \(e(0, .text)) AS b_token, \(e(1, .integer)) AS b_badge FROM \(d.rows(2)) AS j)
        UPDATE deliveries SET badge = b.b_badge FROM b
        WHERE deliveries.notification_id = $1 AND deliveries.token = b.b_token
        """
    }

    /// What a claim reads of a range, in this order (``QueueEngine`` reads them by position;
    /// a range split off another is made as a row of them).
    static let rangeColumns = ["notification_id", "number", "lower_hash", "upper_hash", "cursor_hash", "cursor", "state", "raised_hash", "raised_through"]

    /// The next range due at $1 (or whose lease ran out) of a notification not finished: the one
    /// claimed longest ago (never claimed first), so every broadcast under way gets its turn; a
    /// range whose lease ran out before all (what a lost worker held is sent again first). Its
    /// notification's ``workColumns`` follow its ``rangeColumns``: no statement of their own.
    var pickSegment: String {
        """
        SELECT \(Self.columns(Self.rangeColumns, of: "s")), \(Self.workColumns(of: "n"))
        FROM segments s JOIN notifications n ON n.id = s.notification_id AND n.status < \(NotificationState.finished)
        WHERE (s.state = \(SegmentState.pending) AND s.ready_at <= $1) OR (s.state = \(SegmentState.claimed) AND s.lease_expires_at <= $1)
        ORDER BY s.state DESC, s.last_claimed_at, s.number, s.created_at LIMIT 1\(d.skipLocked(of: "s"))
        """
    }
    /// Leases a range to $1 until $2 at $3, noting how far the claim read it ($6): what is above
    /// is what another worker may split off (``pickSplittable``).
    var leaseSegment: String {
        """
        UPDATE segments SET state = \(SegmentState.claimed), lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, last_claimed_at = $3,
            read_hash = $6
        WHERE notification_id = $4 AND number = $5
        """
    }

    /// The leased range (at $1) with the most keys left above what its holder read, at least $2,
    /// of a notification not finished: when no range is free, a worker splits one.
    var pickSplittable: String {
        """
        SELECT s.notification_id, s.number, s.lower_hash, s.upper_hash, s.cursor_hash, s.read_hash
        FROM segments s JOIN notifications n ON n.id = s.notification_id AND n.status < \(NotificationState.finished)
        WHERE s.state = \(SegmentState.claimed) AND s.lease_expires_at > $1 AND s.read_hash IS NOT NULL AND s.upper_hash - s.read_hash >= $2
        ORDER BY s.upper_hash - s.read_hash DESC LIMIT 1\(d.skipLocked(of: "s"))
        """
    }
    /// Range $2 of notification $1 ends at $3 (it ended at $4): its holder read below it.
    var shortenSegment: String {
        "UPDATE segments SET upper_hash = $3 WHERE notification_id = $1 AND number = $2 AND upper_hash = $4 RETURNING number"
    }
    /// The part split off: range $2 of notification $1, keys $3..<$4, from its start, at $5.
    var insertSplit: String {
        """
        INSERT INTO segments (notification_id, number, lower_hash, upper_hash, cursor_hash, cursor, state, last_claimed_at, created_at)
        VALUES ($1, $2, $3, $4, -1, '', \(SegmentState.pending), $5, $5)
        """
    }

    /// The next active devices of kind $6 (and activity type $7) of a range of app $1 (keys below $2, after ($3, $4), at most $5;
    /// the cursor at or above the range's start: ``RangeCursor/reading(from:)``), as one row:
    /// their tokens joined by newlines (a batch costs one row to hand over, not thousands), each
    /// followed by a space and its environment code when it has one (``RangeLine``), the largest
    /// hash, and how many. `ordered`: the lines in key order. Without it the database joins them
    /// as they come, in no promised order, and need not sort them again (SQLite put each batch's
    /// 5,000 lines in a B-tree of its own for that): the claim finds the last key itself
    /// (``QueueEngine/lastKey(of:maximumHash:)``).
    func rangeOfAll(activityType: Bool, ordered: Bool) -> String {
        """
        SELECT \(d.joinLines(Self.rangeLine, orderBy: ordered ? "hash, token" : nil)), MAX(hash), COUNT(*) FROM (
            SELECT hash, token, environment, platform FROM devices
            WHERE app = $1 AND status = \(DeviceCode.active) AND kind = $6\(activityType ? " AND activity_type = $7" : "") AND (hash, token) > ($3, $4) AND hash < $2
            ORDER BY hash, token LIMIT $5) AS r
        """
    }
    /// As ``rangeOfAll(activityType:ordered:)``, for the devices with any of the tags $7 (the activity type $8).
    func rangeOfTags(activityType: Bool, ordered: Bool) -> String {
        """
        SELECT \(d.joinLines(Self.rangeLine, orderBy: ordered ? "hash, token" : nil)), MAX(hash), COUNT(*) FROM (
            SELECT DISTINCT t.hash AS hash, t.token AS token, d.environment AS environment, d.platform AS platform FROM device_tags t JOIN devices d ON d.app = t.app AND d.hash = t.hash AND d.token = t.token
            WHERE t.app = $1 AND t.tag IN (\(d.list(7, .text))) AND (t.hash, t.token) > ($3, $4) AND t.hash < $2
                AND d.status = \(DeviceCode.active) AND d.kind = $6\(activityType ? " AND d.activity_type = $8" : "")
            ORDER BY t.hash, t.token LIMIT $5) AS r
        """
    }
    /// A device's line in a range: its token, and a space and its environment code when it has one.
    /// A `CASE`, not `token || COALESCE(' ' || environment, '')`: most devices have no
    /// environment, and their token goes into the list as it is, not copied into a new string
    /// first (docs/performance.md, "Measurements behind the code").
    /// A device of another platform than APNs (which has no environment) adds a space, `p` and
    /// its platform's code (``PlatformCode``).
    static let rangeLine = "CASE WHEN platform <> 0 THEN token || ' p' || platform WHEN environment IS NULL THEN token ELSE token || ' ' || environment END"
    var raisedThrough: String {
        """
        UPDATE segments SET raised_hash = $3, raised_through = $4
        WHERE notification_id = $1 AND number = $2 AND (raised_hash IS NULL OR (raised_hash, raised_through) < ($3, $4))
        """
    }
    var markSending: String {
        "UPDATE notifications SET status = \(NotificationState.sending) WHERE status = \(NotificationState.queued) AND id IN (\(d.list(1, .text)))"
    }

    /// Claimed deliveries (rows `[id, reason]`, $3) that cannot be sent, while $1 holds them.
    var failClaimed: String {
        """
        UPDATE deliveries SET state = \(DeliveryState.failed), reason = o.o_reason, finished_at = $2, lease_owner = NULL, lease_expires_at = NULL
        FROM (SELECT \(e(0, .bigint)) AS o_id, \(e(1, .text)) AS o_reason FROM \(d.rows(3)) AS j) AS o
        WHERE deliveries.id = o.o_id AND deliveries.lease_owner = $1 AND deliveries.state = \(DeliveryState.claimed)
        RETURNING id, token, platform
        """
    }
    var endClaimedSegment: String {
        """
        UPDATE segments SET state = \(SegmentState.done), lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = $1 AND number = $2 AND lease_owner = $3 AND state = \(SegmentState.claimed)
        """
    }

    // MARK: Leases and outcomes

    var renewDeliveries: String {
        """
        UPDATE deliveries SET lease_expires_at = $1
        WHERE lease_owner = $2 AND state = \(DeliveryState.claimed) AND id IN (\(d.list(3, .bigint))) RETURNING id
        """
    }
    var renewSegment: String {
        """
        UPDATE segments SET lease_expires_at = $1
        WHERE notification_id = $2 AND number = $3 AND lease_owner = $4 AND state = \(SegmentState.claimed) RETURNING number
        """
    }

    /// A batch's outcomes (rows `[id, state, reason, receipt, nextAttemptAt, uniqueID]`, $3) at
    /// $2, each only while $1 still leases the row.
    var finishDeliveries: String {
        """
        UPDATE deliveries SET state = o.o_state, reason = o.o_reason, apns_id = o.o_apns, unique_id = o.o_unique,
            finished_at = CASE WHEN o.o_state = \(DeliveryState.pending) THEN NULL ELSE $2 END,
            next_attempt_at = COALESCE(o.o_next, deliveries.next_attempt_at), lease_owner = NULL, lease_expires_at = NULL
        FROM (SELECT \(e(0, .bigint)) AS o_id, \(e(1, .smallint)) AS o_state, \(e(2, .text)) AS o_reason, \(e(3, .text)) AS o_apns,
            \(e(4, .bigint)) AS o_next, \(e(5, .text)) AS o_unique FROM \(d.rows(3)) AS j) AS o
        WHERE deliveries.id = o.o_id AND deliveries.lease_owner = $1 AND deliveries.state = \(DeliveryState.claimed)
        RETURNING state, reason, token, platform
        """
    }
    /// Adds to notification $1's counts per platform, rows `[platform, accepted, rejected, failed]` ($2).
    var addPlatformCounts: String {
        """
        INSERT INTO notification_platforms (notification_id, platform, accepted, rejected, failed)
        SELECT $1, \(e(0, .smallint)), \(e(1, .bigint)), \(e(2, .bigint)), \(e(3, .bigint)) FROM \(d.rows(2)) AS j WHERE true
        ON CONFLICT (notification_id, platform) DO UPDATE SET accepted = notification_platforms.accepted + excluded.accepted,
            rejected = notification_platforms.rejected + excluded.rejected, failed = notification_platforms.failed + excluded.failed
        """
    }
    /// A range moves on to ($1, $2), in state $3, only while $6 still holds its lease.
    var advanceSegment: String {
        """
        UPDATE segments SET cursor_hash = $1, cursor = $2, state = $3, lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = $4 AND number = $5 AND lease_owner = $6 AND state = \(SegmentState.claimed) RETURNING number
        """
    }
    /// A range's devices that did not end as plain acceptances (rows `[token, state, reason,
    /// receipt, nextAttemptAt, badge, environment, platform]`, $3), kept for listing and retries, with the badge they
    /// were sent, which a retry sends again.
    var insertRangeDeliveries: String {
        """
        INSERT INTO deliveries (notification_id, token, state, attempts, next_attempt_at, reason, apns_id, finished_at, badge, environment, platform)
        SELECT $1, o_token, o_state, CASE WHEN o_state = \(DeliveryState.pending) THEN 1 ELSE 0 END, COALESCE(o_next, $2), o_reason, o_apns,
            CASE WHEN o_state = \(DeliveryState.pending) THEN NULL ELSE $2 END, o_badge, o_environment, o_platform
        FROM (SELECT \(e(0, .text)) AS o_token, \(e(1, .smallint)) AS o_state, \(e(2, .text)) AS o_reason, \(e(3, .text)) AS o_apns,
            \(e(4, .bigint)) AS o_next, \(e(5, .integer)) AS o_badge, \(e(6, .smallint)) AS o_environment, \(e(7, .smallint)) AS o_platform FROM \(d.rows(3)) AS j) AS o
        WHERE true
        ON CONFLICT (notification_id, token) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
            next_attempt_at = excluded.next_attempt_at, reason = excluded.reason, apns_id = excluded.apns_id,
            finished_at = excluded.finished_at, badge = excluded.badge
        """
    }
    var releaseDeliveries: String {
        """
        UPDATE deliveries SET state = \(DeliveryState.pending), attempts = \(d.greatest("attempts - 1", "0")), lease_owner = NULL
        WHERE id IN (\(d.list(1, .bigint))) AND lease_owner = $2 AND state = \(DeliveryState.claimed)
        """
    }
    var releaseSegment: String {
        """
        UPDATE segments SET state = \(SegmentState.pending), lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = $1 AND number = $2 AND lease_owner = $3 AND state = \(SegmentState.claimed)
        """
    }

    // MARK: Overview

    /// App $1's devices counted by status, kind, environment and stored platform (``PlatformCode``).
    var deviceCounts: String {
        "SELECT \(DeviceCountColumn.selectList) FROM devices WHERE app = $1 GROUP BY status, kind, environment, platform"
    }
    /// App $1's notifications queued or sending, and their devices not yet ended.
    var appQueue: String {
        """
        SELECT COUNT(*), CAST(COALESCE(SUM(targeted - accepted - rejected - failed), 0) AS BIGINT) FROM notifications
        WHERE app = $1 AND status < \(NotificationState.finished)
        """
    }
    /// Adds ended deliveries to app $1's minute $2 (minutes since the epoch), shard $3.
    var recordMinute: String {
        """
        INSERT INTO delivery_minutes (app, minute, shard, accepted, rejected, failed) VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (app, minute, shard) DO UPDATE SET accepted = delivery_minutes.accepted + excluded.accepted,
            rejected = delivery_minutes.rejected + excluded.rejected, failed = delivery_minutes.failed + excluded.failed
        """
    }
    /// App $1's ended deliveries per minute from $2 to $3.
    var activity: String {
        """
        SELECT minute, CAST(SUM(accepted) AS BIGINT), CAST(SUM(rejected) AS BIGINT), CAST(SUM(failed) AS BIGINT) FROM delivery_minutes
        WHERE app = $1 AND minute >= $2 AND minute <= $3 GROUP BY minute ORDER BY minute
        """
    }

    // MARK: Live Activities

    /// Activity $2 of app $1, created active at $3 unless it exists.
    var insertActivity: String {
        "INSERT INTO activities (app, id, state, created_at) VALUES ($1, $2, \(ActivityCode.active), $3) ON CONFLICT (app, id) DO NOTHING"
    }
    /// Activity $2 of app $1, locked: events and tokens of one activity take turns.
    var lockActivity: String { "SELECT state FROM activities WHERE app = $1 AND id = $2\(d.forUpdate)" }
    var selectActivity: String { "SELECT state, created_at, ended_at, dismissal_at FROM activities WHERE app = $1 AND id = $2" }
    /// Ends activity $2 of app $1 at $3; its tokens are forgotten after $4.
    var endActivity: String {
        "UPDATE activities SET state = \(ActivityCode.ended), ended_at = $3, dismissal_at = $4 WHERE app = $1 AND id = $2"
    }
    var activityToken: String { "SELECT 1 FROM activity_tokens WHERE app = $1 AND activity_id = $2 AND token = $3" }
    var countActivityTokens: String { "SELECT COUNT(*) FROM activity_tokens WHERE app = $1 AND activity_id = $2" }
    /// Token $3 of activity $2 of app $1, with user $4 and environment $5 (null: kept), at $6.
    var upsertActivityToken: String {
        """
        INSERT INTO activity_tokens (app, activity_id, token, user_id, environment, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
        ON CONFLICT (app, activity_id, token) DO UPDATE SET user_id = COALESCE(excluded.user_id, activity_tokens.user_id),
            environment = COALESCE(excluded.environment, activity_tokens.environment), updated_at = excluded.updated_at
        RETURNING token, user_id, environment, created_at, updated_at
        """
    }
    var activityTokens: String {
        "SELECT token, user_id, environment, created_at, updated_at FROM activity_tokens WHERE app = $1 AND activity_id = $2 ORDER BY token LIMIT $3"
    }
    var deleteActivityToken: String { "DELETE FROM activity_tokens WHERE app = $1 AND activity_id = $2 AND token = $3 RETURNING token" }
    /// A notification's audience ($1): its kind and values.
    var audienceOf: String { "SELECT audience_kind, audience FROM notifications WHERE id = $1" }
    /// Update tokens of activity $2 of app $1 that APNs said are gone (rows `[token, at]`, $3),
    /// unless reported again since (Apple's timestamp rule, as for devices).
    var retireActivityTokens: String {
        """
        DELETE FROM activity_tokens WHERE app = $1 AND activity_id = $2
            AND EXISTS (SELECT 1 FROM \(d.rows(3)) AS j WHERE \(e(0, .text)) = activity_tokens.token AND activity_tokens.updated_at <= \(e(1, .bigint)))
        """
    }
    /// Ended activities whose dismissal date is before $1, at most $2, locked.
    var dismissedActivities: String {
        "SELECT app, id FROM activities WHERE state = \(ActivityCode.ended) AND dismissal_at <= $1 LIMIT $2\(d.skipLocked(of: nil))"
    }
    /// Activities (rows `[app, id]`, $1) and their tokens.
    var deleteActivities: [String] {
        [
            "DELETE FROM activity_tokens WHERE (app, activity_id) IN (SELECT \(e(0, .text)), \(e(1, .text)) FROM \(d.rows(1)) AS j)",
            "DELETE FROM activities WHERE (app, id) IN (SELECT \(e(0, .text)), \(e(1, .text)) FROM \(d.rows(1)) AS j)",
        ]
    }

    // MARK: Broadcast channels

    var insertChannel: String {
        "INSERT INTO channels (app, id, environment, storage_policy, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (app, id) DO NOTHING"
    }
    var channels: String { "SELECT id, environment, storage_policy, created_at FROM channels WHERE app = $1 ORDER BY created_at, id LIMIT $2" }
    var selectChannel: String { "SELECT id, environment, storage_policy, created_at FROM channels WHERE app = $1 AND id = $2" }
    var deleteChannel: String { "DELETE FROM channels WHERE app = $1 AND id = $2 RETURNING id" }

    // MARK: Housekeeping

    var statistics: String {
        """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE state < \(DeliveryState.finished)),
            (SELECT COUNT(*) FROM segments WHERE state < \(SegmentState.done)),
            (SELECT COUNT(*) FROM notifications WHERE status < \(NotificationState.finished))
        """
    }
    var purgeDeliveries: String {
        """
        DELETE FROM deliveries WHERE id IN (
            SELECT d.id FROM deliveries d JOIN notifications n ON n.id = d.notification_id
            WHERE n.finished_at IS NOT NULL AND n.finished_at < $1 LIMIT $2)
        RETURNING id
        """
    }
    var purgeableNotifications: String {
        """
        SELECT id FROM notifications n WHERE finished_at IS NOT NULL AND finished_at < $1
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id) LIMIT $2
        """
    }
    /// Minutes of activity before minute $1.
    var purgeMinutes: String { "DELETE FROM delivery_minutes WHERE minute < $1" }
    var deleteNotifications: [String] {
        [
            "DELETE FROM notification_reasons WHERE notification_id IN (\(d.list(1, .text)))",
            "DELETE FROM notification_platforms WHERE notification_id IN (\(d.list(1, .text)))",
            "DELETE FROM receipts WHERE notification_id IN (\(d.list(1, .text)))",
            "DELETE FROM receipt_counts WHERE notification_id IN (\(d.list(1, .text)))",
            "DELETE FROM segments WHERE notification_id IN (\(d.list(1, .text)))",
            "DELETE FROM notifications WHERE id IN (\(d.list(1, .text)))",
        ]
    }
    /// Devices retired (unregistered or invalid) before $1; locked, skipping those another
    /// process is purging.
    /// App $1's active devices of platform $2 not registered again since $3, at most $5 of them,
    /// retired as `Stale` at $4.
    var retireStaleDevices: String {
        """
        UPDATE devices SET status = \(DeviceCode.unregistered), reason = '\(DeliveryReason.gateway(.stale))', invalidated_at = $4
        WHERE app = $1 AND token IN (
            SELECT token FROM devices WHERE app = $1 AND platform = $2 AND status = \(DeviceCode.active) AND updated_at < $3 LIMIT $5)
            AND platform = $2 AND status = \(DeviceCode.active) AND updated_at < $3
        RETURNING token, kind, platform
        """
    }
    var retiredDevices: String {
        "SELECT app, token, hash FROM devices WHERE status <> \(DeviceCode.active) AND invalidated_at < $1 LIMIT $2\(d.skipLocked(of: nil))"
    }
    /// App $1's devices (rows `[token, hash]`, $2) and their tags.
    var deleteDevices: [String] {
        [
            "DELETE FROM device_tags WHERE app = $1 AND token IN (SELECT \(e(0, .text)) FROM \(d.rows(2)) AS j)",
            "DELETE FROM devices WHERE app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))",
        ]
    }
    /// Deliveries not yet ended, per app, from the active notifications' counts.
    var pendingByApp: String {
        """
        SELECT app, CAST(COALESCE(SUM(targeted - accepted - rejected - failed), 0) AS BIGINT) FROM notifications
        WHERE status < \(NotificationState.finished) GROUP BY app
        """
    }

    /// Devices and tags stored before hashes were (migration 4), after ($1, $2) in key order, at most $3.
    var unkeyedDevices: String {
        "SELECT app, token FROM devices WHERE (app, token) > ($1, $2) AND hash IS NULL ORDER BY app, token LIMIT $3"
    }
    var unkeyedTags: String {
        "SELECT DISTINCT app, token FROM device_tags WHERE (app, token) > ($1, $2) AND hash IS NULL ORDER BY app, token LIMIT $3"
    }
    /// Keys for rows `[app, token, key]` ($1).
    func setKeys(_ table: String) -> String {
        """
        UPDATE \(table) SET hash = k.k_hash
        FROM (SELECT \(e(0, .text)) AS k_app, \(e(1, .text)) AS k_token, \(e(2, .bigint)) AS k_hash FROM \(d.rows(1)) AS j) AS k
        WHERE \(table).app = k.k_app AND \(table).token = k.k_token
        """
    }
}

/// What a notification is read with (``QueueStatements/notificationColumns``).
enum NotificationColumn: Int, SQLColumns {
    case id, app, audienceKind, audience, payload, pushType, priority, expiration, collapseID, badgeMode, idempotencyKey, status, targeted, accepted,
        rejected, failed, deadline, createdAt, finishedAt, activityType, platformOptions, schedule, optedOut, capped, digested, content

    var sqlName: String {
        switch self {
        case .id: "id"
        case .app: "app"
        case .audienceKind: "audience_kind"
        case .audience: "audience"
        case .payload: "payload"
        case .pushType: "push_type"
        case .priority: "priority"
        case .expiration: "expiration"
        case .collapseID: "collapse_id"
        case .badgeMode: "badge_mode"
        case .idempotencyKey: "idempotency_key"
        case .status: "status"
        case .targeted: "targeted"
        case .accepted: "accepted"
        case .rejected: "rejected"
        case .failed: "failed"
        case .deadline: "deadline"
        case .createdAt: "created_at"
        case .finishedAt: "finished_at"
        case .activityType: "activity_type"
        case .platformOptions: "platform_options"
        case .schedule: "schedule"
        case .optedOut: "opted_out"
        case .capped: "capped"
        case .digested: "digested"
        case .content: "content"
        }
    }
}

/// What a device is read with (``QueueStatements/deviceColumns``).
enum DeviceColumn: Int, SQLColumns {
    case app, token, user, tags, badge, status, reason, invalidatedAt, createdAt, updatedAt, kind, activityType, environment, address, platform,
        timeZone, locale, preferences

    var sqlName: String {
        switch self {
        case .app: "app"
        case .token: "token"
        case .user: "user_id"
        case .tags: "tags"
        case .badge: "badge"
        case .status: "status"
        case .reason: "reason"
        case .invalidatedAt: "invalidated_at"
        case .createdAt: "created_at"
        case .updatedAt: "updated_at"
        case .kind: "kind"
        case .activityType: "activity_type"
        case .environment: "environment"
        case .address: "address"
        case .platform: "platform"
        case .timeZone: "time_zone"
        case .locale: "locale"
        case .preferences: "preferences"
        }
    }
}

/// What a worker needs of a notification (``QueueStatements/workColumns(of:)``), after the
/// columns of the statement before them.
enum WorkColumn: Int, SQLColumns {
    case status, app, payload, pushType, priority, expiration, collapseID, badgeMode, deadline, audienceKind, audience, activityType,
        platformOptions, schedule, content, template

    var sqlName: String {
        switch self {
        case .status: "status"
        case .app: "app"
        case .payload: "payload"
        case .pushType: "push_type"
        case .priority: "priority"
        case .expiration: "expiration"
        case .collapseID: "collapse_id"
        case .badgeMode: "badge_mode"
        case .deadline: "deadline"
        case .audienceKind: "audience_kind"
        case .audience: "audience"
        case .activityType: "activity_type"
        case .platformOptions: "platform_options"
        case .schedule: "schedule"
        case .content: "content"
        case .template: "template"
        }
    }
}

/// A claimed delivery, as ``QueueStatements/claimDeliveries`` returns it.
enum ClaimedColumn: Int, SQLColumns {
    case id, notificationID, token, attempts, badge, environment, platform

    var sqlName: String {
        switch self {
        case .id: "id"
        case .notificationID: "notification_id"
        case .token: "token"
        case .attempts: "attempts"
        case .badge: "badge"
        case .environment: "environment"
        case .platform: "platform"
        }
    }
}

/// One group of an app's devices (``QueueStatements/deviceCounts``).
enum DeviceCountColumn: Int, SQLColumns {
    case status, kind, environment, platform, count

    var sqlName: String {
        switch self {
        case .status: "status"
        case .kind: "kind"
        case .environment: "environment"
        case .platform: "platform"
        case .count: "COUNT(*)"
        }
    }
}
