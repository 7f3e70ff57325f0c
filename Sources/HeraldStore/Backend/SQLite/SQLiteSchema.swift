/// The SQLite schema, as numbered migrations: append-only, each applied once, in order. Times are
/// milliseconds since the epoch; statuses and states are small integers (see ``SQLiteCodes``).
enum SQLiteSchema {
    static let migrations: [[String]] = [
        // 1: devices and their tags, notifications, per-device deliveries, broadcast key ranges.
        [
            """
            CREATE TABLE devices (
                app TEXT NOT NULL,
                token TEXT NOT NULL,
                user_id TEXT,                 -- '' or NULL: none
                tags TEXT,                    -- comma-separated, sorted; '' or NULL: none
                badge INTEGER,                -- NULL: 0
                badge_notification TEXT,      -- the newest notification that raised the badge
                status INTEGER NOT NULL DEFAULT 0,
                reason TEXT,
                invalidated_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, token)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX devices_user ON devices (app, user_id, token) WHERE user_id IS NOT NULL AND user_id <> ''",
            "CREATE INDEX devices_status ON devices (app, status, token) WHERE status <> 0",
            "CREATE TABLE device_tags (app TEXT NOT NULL, tag TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (app, tag, token)) WITHOUT ROWID",
            "CREATE INDEX device_tags_token ON device_tags (app, token)",
            """
            CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                app TEXT NOT NULL,
                audience_kind INTEGER NOT NULL,
                audience TEXT NOT NULL,       -- newline-separated tokens, users or tags
                payload BLOB NOT NULL,
                push_type TEXT NOT NULL,
                priority INTEGER,
                expiration INTEGER,
                collapse_id TEXT,
                badge_mode INTEGER NOT NULL,
                idempotency_key TEXT,
                status INTEGER NOT NULL,
                targeted INTEGER NOT NULL,
                accepted INTEGER NOT NULL DEFAULT 0,
                rejected INTEGER NOT NULL DEFAULT 0,
                failed INTEGER NOT NULL DEFAULT 0,
                deadline INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                finished_at INTEGER
            ) WITHOUT ROWID
            """,
            "CREATE UNIQUE INDEX notifications_idempotency ON notifications (app, idempotency_key) WHERE idempotency_key IS NOT NULL",
            "CREATE INDEX notifications_finished ON notifications (finished_at) WHERE finished_at IS NOT NULL",
            "CREATE INDEX notifications_active ON notifications (status) WHERE status < 2",
            """
            CREATE TABLE notification_reasons (
                notification_id TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
                PRIMARY KEY (notification_id, reason)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE deliveries (
                id INTEGER PRIMARY KEY,
                notification_id TEXT NOT NULL,
                token TEXT NOT NULL,
                state INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at INTEGER NOT NULL,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                badge INTEGER,
                reason TEXT,
                apns_id TEXT,
                finished_at INTEGER
            )
            """,
            "CREATE UNIQUE INDEX deliveries_token ON deliveries (notification_id, token)",
            "CREATE INDEX deliveries_ready ON deliveries (next_attempt_at) WHERE state = 0",
            "CREATE INDEX deliveries_leased ON deliveries (lease_expires_at) WHERE state = 1",
            "CREATE INDEX deliveries_outcome ON deliveries (notification_id, state, token)",
            """
            CREATE TABLE segments (
                notification_id TEXT NOT NULL,
                number INTEGER NOT NULL,
                upper TEXT,                   -- tokens below this (NULL: no end)
                cursor TEXT NOT NULL,         -- tokens above this are still to read
                state INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (notification_id, number)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX segments_ready ON segments (state, created_at)",
        ],
        // 2: how far into its range a broadcast has raised badges (devices.badge_notification is
        // no longer written: a notification claimed after a later one must still raise).
        ["ALTER TABLE segments ADD COLUMN raised_through TEXT"],
        // 3: when each range was last claimed, so ranges take turns: a broadcast queued behind
        // another (of any app) starts within one batch per worker, and then they share.
        ["ALTER TABLE segments ADD COLUMN last_claimed_at INTEGER NOT NULL DEFAULT 0"],
    ]
}


// The named queries, beside the schema they read and write.
extension SQLiteSchema {
    static let createVersions = "CREATE TABLE IF NOT EXISTS herald_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
    static let currentVersion = "SELECT COALESCE(MAX(version), 0) AS version FROM herald_schema"
    static let recordVersion = "INSERT INTO herald_schema (version, applied_at) VALUES (?, ?)"

    // MARK: Devices

    static let deviceColumns = "app, token, user_id, tags, badge, status, reason, invalidated_at, created_at, updated_at"
    static let selectDevice = "SELECT \(deviceColumns) FROM devices WHERE app = ? AND token = ?"

    /// Upserts a batch given as one JSON array of `[token, user, tags, badge]` (?2) for app ?1 at
    /// time ?3: SQLite reads the batch itself, with no statement or value per row. A null user,
    /// tags or badge keeps what is stored; registering makes the device active again.
    static let upsertDevices = """
        INSERT INTO devices (app, token, user_id, tags, badge, status, created_at, updated_at)
        SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, 0, ?3, ?3 FROM json_each(?2) AS j WHERE true
        ON CONFLICT (app, token) DO UPDATE SET
            user_id = COALESCE(excluded.user_id, devices.user_id),
            tags = COALESCE(excluded.tags, devices.tags),
            badge = COALESCE(excluded.badge, devices.badge),
            status = 0, reason = NULL, invalidated_at = NULL,
            updated_at = excluded.updated_at
        """
    /// The tags of the tokens in the JSON array ?2 are replaced by the `[token, tag]` pairs of ?3.
    static let deleteTags = "DELETE FROM device_tags WHERE app = ?1 AND token IN (SELECT value FROM json_each(?2))"
    static let insertTags = "INSERT OR IGNORE INTO device_tags (app, tag, token) SELECT ?1, j.value ->> 1, j.value ->> 0 FROM json_each(?2) AS j"

    static let deleteDevice = "DELETE FROM devices WHERE app = ? AND token = ?"
    static let deleteDeviceTags = "DELETE FROM device_tags WHERE app = ? AND token = ?"

    /// Keyset pagination by token, optionally by status, user or tag.
    static func listDevices(status: Bool, user: Bool, tag: Bool) -> String {
        var sql = "SELECT d.app, d.token, d.user_id, d.tags, d.badge, d.status, d.reason, d.invalidated_at, d.created_at, d.updated_at FROM devices d"
        if tag { sql += " JOIN device_tags t ON t.app = d.app AND t.token = d.token AND t.tag = ?" }
        sql += " WHERE d.app = ? AND d.token > ?"
        if status { sql += " AND d.status = ?" }
        if user { sql += " AND d.user_id = ?" }
        return sql + " ORDER BY d.token LIMIT ?"
    }

    static func countDevices(status: Bool) -> String {
        "SELECT COUNT(*) AS count FROM devices WHERE app = ?" + (status ? " AND status = ?" : "")
    }

    /// `Unregistered`: only if the device has not registered since APNs's timestamp (apns-spec §1.6).
    static let unregisterDevice = """
        UPDATE devices SET status = 1, reason = ?, invalidated_at = ?
        WHERE app = ? AND token = ? AND status = 0 AND updated_at <= ?
        """
    static let invalidateDevice = "UPDATE devices SET status = 2, reason = ? WHERE app = ? AND token = ? AND status = 0"

    // MARK: Notifications

    static let notificationColumns = """
        id, app, audience_kind, audience, payload, push_type, priority, expiration, collapse_id, badge_mode, \
        idempotency_key, status, targeted, accepted, rejected, failed, deadline, created_at, finished_at
        """
    static let insertNotification = """
        INSERT INTO notifications (id, app, audience_kind, audience, payload, push_type, priority, expiration, collapse_id,
            badge_mode, idempotency_key, status, targeted, deadline, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
        """
    static let selectNotification = "SELECT \(notificationColumns) FROM notifications WHERE id = ?"
    static let selectByIdempotencyKey = "SELECT \(notificationColumns) FROM notifications WHERE app = ? AND idempotency_key = ?"
    static let selectReasons = "SELECT reason, count FROM notification_reasons WHERE notification_id = ?"

    /// Active devices among `count` tokens, and the stored status of the others.
    static func deviceStatuses(tokens: Int) -> String {
        "SELECT token, status, reason FROM devices WHERE app = ? AND token IN (\(placeholders(tokens)))"
    }

    static func devicesOfUsers(users: Int) -> String {
        "SELECT token FROM devices WHERE app = ? AND status = 0 AND user_id IN (\(placeholders(users))) ORDER BY token"
    }

    static func insertDeliveries(rows: Int) -> String {
        "INSERT OR IGNORE INTO deliveries (notification_id, token, state, next_attempt_at, reason, finished_at) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }

    static let countActive = "SELECT COUNT(*) AS count FROM devices WHERE app = ? AND status = 0"
    static func countTagged(tags: Int) -> String {
        """
        SELECT COUNT(DISTINCT t.token) AS count FROM device_tags t JOIN devices d ON d.app = t.app AND d.token = t.token
        WHERE t.app = ? AND t.tag IN (\(placeholders(tags))) AND d.status = 0
        """
    }

    static let insertSegment = "INSERT INTO segments (notification_id, number, upper, cursor, state, created_at) VALUES (?, ?, ?, ?, 0, ?)"

    static func listDeliveries(outcome: Bool) -> String {
        "SELECT token, state, reason, apns_id, finished_at FROM deliveries WHERE notification_id = ? AND token > ?"
            + (outcome ? " AND state = ?" : " AND state >= 2") + " ORDER BY token LIMIT ?"
    }

    static let cancelNotification = "UPDATE notifications SET status = 3, finished_at = ? WHERE id = ? AND status < 2"
    /// A notification's unsent deliveries fail, with a reason.
    static let cancelDeliveries = """
        UPDATE deliveries SET state = \(StoreCodes.failed), reason = ?, finished_at = ?, lease_owner = NULL
        WHERE notification_id = ? AND state = \(StoreCodes.pending)
        """
    static let cancelSegments = "UPDATE segments SET state = 2 WHERE notification_id = ? AND state = 0"

    /// A claimed delivery that cannot be sent, while this worker holds it.
    static let failClaimed = """
        UPDATE deliveries SET state = \(StoreCodes.failed), reason = ?, finished_at = ?, lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ? AND lease_owner = ? AND state = \(StoreCodes.claimed)
        """
    static let endClaimedSegment = """
        UPDATE segments SET state = \(StoreCodes.segmentDone), lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = ? AND number = ? AND lease_owner = ? AND state = \(StoreCodes.claimed)
        """

    // MARK: Queue

    /// Deliveries due, and deliveries whose lease ran out, oldest first.
    static let readyDeliveries = """
        SELECT id, notification_id, token, state, attempts, badge FROM (
            SELECT id, notification_id, token, state, attempts, badge, next_attempt_at AS due FROM deliveries
            WHERE state = 0 AND next_attempt_at <= ?1
            UNION ALL
            SELECT id, notification_id, token, state, attempts, badge, lease_expires_at AS due FROM deliveries
            WHERE state = 1 AND lease_expires_at <= ?1
        ) ORDER BY due, id LIMIT ?2
        """
    static func leaseDeliveries(count: Int) -> String {
        "UPDATE deliveries SET state = 1, lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1 WHERE id IN (\(placeholders(count)))"
    }

    static func notifications(count: Int) -> String {
        "SELECT \(notificationColumns) FROM notifications WHERE id IN (\(placeholders(count)))"
    }

    static func markSending(count: Int) -> String {
        "UPDATE notifications SET status = 1 WHERE status = 0 AND id IN (\(placeholders(count)))"
    }

    /// A range due (or whose lease ran out), of a notification not cancelled: the one claimed
    /// longest ago (never claimed first), so every broadcast under way gets its turn; a range
    /// whose lease ran out before all (what a lost worker held is sent again first).
    static let readySegment = """
        SELECT s.notification_id, s.number, s.upper, s.cursor, s.state, s.attempts, s.raised_through FROM segments s
        JOIN notifications n ON n.id = s.notification_id AND n.status < 2
        WHERE s.state = 0 OR (s.state = 1 AND s.lease_expires_at <= ?)
        ORDER BY s.state DESC, s.last_claimed_at, s.number, s.created_at LIMIT 1
        """
    static let leaseSegment = """
        UPDATE segments SET state = 1, lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1, last_claimed_at = ?
        WHERE notification_id = ? AND number = ?
        """

    /// The next active devices of a range (all devices of the app), as one comma-separated row
    /// (a batch costs one row to hand over, not thousands) with the last of them, where the range
    /// goes on next time.
    static let rangeOfAll = """
        SELECT group_concat(token, ',') AS tokens, max(token) AS last FROM (
            SELECT token FROM devices WHERE app = ?1 AND status = 0 AND token > ?2 AND (?3 IS NULL OR token < ?3)
            ORDER BY token LIMIT ?4)
        """
    static func rangeOfTags(tags: Int) -> String {
        """
        SELECT group_concat(token, ',') AS tokens, max(token) AS last FROM (
            SELECT DISTINCT t.token AS token FROM device_tags t JOIN devices d ON d.app = t.app AND d.token = t.token
            WHERE t.app = ?1 AND t.token > ?2 AND (?3 IS NULL OR t.token < ?3) AND d.status = 0
                AND t.tag IN (\((0..<tags).map { "?\($0 + 5)" }.joined(separator: ", ")))
            ORDER BY t.token LIMIT ?4)
        """
    }

    /// Raises the badges of app ?1's devices among `tokens` (from ?3 on) by one, only those above
    /// ?2 unless it is NULL. A badge stops at the largest APNs accepts. Each claim raises a
    /// device once per delivery row (which keeps the raised badge) or range (which keeps how far
    /// it raised), so a notification claimed after a later one still raises, and a re-claim
    /// after a lease ran out does not.
    static func raiseBadges(tokens: Int) -> String {
        """
        UPDATE devices SET badge = \(badgeInRange(maximum: DeviceRegistration.maximumBadge - 1)) + 1
        WHERE app = ?1 AND (?2 IS NULL OR token > ?2)
            AND token IN (\((0..<tokens).map { "?\($0 + 3)" }.joined(separator: ", ")))
        """
    }
    static let raisedThrough = """
        UPDATE segments SET raised_through = ?3 WHERE notification_id = ?1 AND number = ?2 AND (raised_through IS NULL OR raised_through < ?3)
        """

    static func badges(tokens: Int) -> String {
        "SELECT token, \(badgeInRange(maximum: DeviceRegistration.maximumBadge)) AS badge FROM devices WHERE app = ? AND token IN (\(placeholders(tokens)))"
    }

    /// A device's stored badge (none: 0) brought into 0...`maximum`, as an integer whatever was
    /// written into the column.
    static func badgeInRange(maximum: Int) -> String {
        "CAST(MIN(MAX(COALESCE(badge, 0), 0), \(maximum)) AS INTEGER)"
    }

    static let setDeliveryBadge = "UPDATE deliveries SET badge = ? WHERE id = ?"
    static let renewDeliveries = "UPDATE deliveries SET lease_expires_at = ? WHERE lease_owner = ? AND state = 1 AND id IN "
    static let renewSegment = "UPDATE segments SET lease_expires_at = ? WHERE notification_id = ? AND number = ? AND lease_owner = ? AND state = 1"

    /// A delivery's outcome, only while this worker still holds its lease.
    static let finishDelivery = """
        UPDATE deliveries SET state = ?, reason = ?, apns_id = ?, finished_at = ?, next_attempt_at = COALESCE(?, next_attempt_at),
            lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ? AND lease_owner = ? AND state = 1
        """
    static let releaseDelivery = "UPDATE deliveries SET state = 0, attempts = MAX(attempts - 1, 0), lease_owner = NULL WHERE id = ? AND lease_owner = ? AND state = 1"

    /// A range moves on, only while this worker still holds its lease.
    static let advanceSegment = """
        UPDATE segments SET cursor = ?, state = ?, lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = ? AND number = ? AND lease_owner = ? AND state = 1
        """
    static let releaseSegment = "UPDATE segments SET state = 0, lease_owner = NULL, lease_expires_at = NULL WHERE notification_id = ? AND number = ? AND lease_owner = ? AND state = 1"

    /// A range's devices that did not end as plain acceptances, kept for listing and retries.
    /// With the badge they were sent, which a retry sends again.
    static func insertRangeDeliveries(rows: Int) -> String {
        """
        INSERT INTO deliveries (notification_id, token, state, attempts, next_attempt_at, reason, apns_id, finished_at, badge) VALUES \
        \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", "))
        ON CONFLICT (notification_id, token) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
            next_attempt_at = excluded.next_attempt_at, reason = excluded.reason, apns_id = excluded.apns_id,
            finished_at = excluded.finished_at, badge = excluded.badge
        """
    }

    static let addCounts = "UPDATE notifications SET accepted = accepted + ?, rejected = rejected + ?, failed = failed + ? WHERE id = ?"
    static let addReason = """
        INSERT INTO notification_reasons (notification_id, reason, count) VALUES (?, ?, ?)
        ON CONFLICT (notification_id, reason) DO UPDATE SET count = count + excluded.count
        """
    static let leasedWork = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = ?1 AND state = 1 AND lease_expires_at > ?2)
            + (SELECT COUNT(*) FROM segments WHERE notification_id = ?1 AND state = 1 AND lease_expires_at > ?2) AS leased
        """
    static let unfinishedWork = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = ?1 AND state < 2)
            + (SELECT COUNT(*) FROM segments WHERE notification_id = ?1 AND state < 2) AS open
        """
    /// Done: a broadcast's count becomes exact.
    static let finishNotification = """
        UPDATE notifications SET status = 2, finished_at = ?,
            targeted = CASE WHEN audience_kind >= 2 THEN accepted + rejected + failed ELSE targeted END
        WHERE id = ? AND status = 1
        """
    static let notificationStatus = "SELECT status, deadline FROM notifications WHERE id = ?"

    static let statistics = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE state < 2) AS deliveries,
            (SELECT COUNT(*) FROM segments WHERE state < 2) AS segments,
            (SELECT COUNT(*) FROM notifications WHERE status < 2) AS notifications
        """

    // MARK: Retention

    static let purgeDeliveries = """
        DELETE FROM deliveries WHERE id IN (
            SELECT d.id FROM deliveries d JOIN notifications n ON n.id = d.notification_id
            WHERE n.finished_at IS NOT NULL AND n.finished_at < ? LIMIT ?)
        """
    static let purgeNotifications = """
        SELECT id FROM notifications n WHERE finished_at IS NOT NULL AND finished_at < ?
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id) LIMIT ?
        """
    static func deleteNotifications(count: Int) -> [String] {
        let list = placeholders(count)
        return [
            "DELETE FROM notification_reasons WHERE notification_id IN (\(list))",
            "DELETE FROM segments WHERE notification_id IN (\(list))",
            "DELETE FROM notifications WHERE id IN (\(list))",
        ]
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}
