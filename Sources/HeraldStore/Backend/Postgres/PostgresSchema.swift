import PostgresNIO

/// The PostgreSQL schema, as numbered migrations (append-only, each applied once in order under an
/// advisory lock), and its named queries. Times are milliseconds since the epoch; statuses and
/// states are the small integers of ``StoreCodes``.
enum PostgresSchema {
    /// The advisory lock that makes processes starting together migrate once.
    static let migrationLock: Int64 = 0x4865_7261_6C64  // "Herald"
    /// The LISTEN/NOTIFY channel that wakes idle workers.
    static let workChannel = "herald_work"

    static let migrations: [[String]] = [
        // 1: devices and their tags, notifications, per-device deliveries, broadcast key ranges.
        [
            """
            CREATE TABLE devices (
                app TEXT NOT NULL,
                token TEXT NOT NULL,
                user_id TEXT,
                tags TEXT,
                badge INTEGER,
                badge_notification TEXT,
                status SMALLINT NOT NULL DEFAULT 0,
                reason TEXT,
                invalidated_at BIGINT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app, token)
            )
            """,
            "CREATE INDEX devices_user ON devices (app, user_id, token) WHERE user_id IS NOT NULL AND user_id <> ''",
            "CREATE INDEX devices_status ON devices (app, status, token) WHERE status <> 0",
            "CREATE TABLE device_tags (app TEXT NOT NULL, tag TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (app, tag, token))",
            "CREATE INDEX device_tags_token ON device_tags (app, token)",
            """
            CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                app TEXT NOT NULL,
                audience_kind SMALLINT NOT NULL,
                audience TEXT NOT NULL,
                payload BYTEA NOT NULL,
                push_type TEXT NOT NULL,
                priority SMALLINT,
                expiration BIGINT,
                collapse_id TEXT,
                badge_mode SMALLINT NOT NULL,
                idempotency_key TEXT,
                status SMALLINT NOT NULL,
                targeted BIGINT NOT NULL,
                accepted BIGINT NOT NULL DEFAULT 0,
                rejected BIGINT NOT NULL DEFAULT 0,
                failed BIGINT NOT NULL DEFAULT 0,
                deadline BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                finished_at BIGINT
            )
            """,
            "CREATE UNIQUE INDEX notifications_idempotency ON notifications (app, idempotency_key) WHERE idempotency_key IS NOT NULL",
            "CREATE INDEX notifications_finished ON notifications (finished_at) WHERE finished_at IS NOT NULL",
            "CREATE INDEX notifications_active ON notifications (status) WHERE status < 2",
            """
            CREATE TABLE notification_reasons (
                notification_id TEXT NOT NULL, reason TEXT NOT NULL, count BIGINT NOT NULL,
                PRIMARY KEY (notification_id, reason)
            )
            """,
            """
            CREATE TABLE deliveries (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                notification_id TEXT NOT NULL,
                token TEXT NOT NULL,
                state SMALLINT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                lease_owner TEXT,
                lease_expires_at BIGINT,
                badge INTEGER,
                reason TEXT,
                apns_id TEXT,
                finished_at BIGINT
            )
            """,
            "CREATE UNIQUE INDEX deliveries_token ON deliveries (notification_id, token)",
            "CREATE INDEX deliveries_ready ON deliveries (next_attempt_at, id) WHERE state = 0",
            "CREATE INDEX deliveries_leased ON deliveries (lease_expires_at) WHERE state = 1",
            "CREATE INDEX deliveries_outcome ON deliveries (notification_id, state, token)",
            """
            CREATE TABLE segments (
                notification_id TEXT NOT NULL,
                number INTEGER NOT NULL,
                upper TEXT,
                cursor TEXT NOT NULL,
                state SMALLINT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                lease_owner TEXT,
                lease_expires_at BIGINT,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (notification_id, number)
            )
            """,
            "CREATE INDEX segments_ready ON segments (state, created_at)",
        ],
        // 2: how far into its range a broadcast has raised badges (devices.badge_notification is
        // no longer written: a notification claimed after a later one must still raise).
        ["ALTER TABLE segments ADD COLUMN raised_through TEXT"],
        // 3: when each range was last claimed, so ranges take turns: a broadcast queued behind
        // another (of any app) starts within one batch per worker, and then they share.
        ["ALTER TABLE segments ADD COLUMN last_claimed_at BIGINT NOT NULL DEFAULT 0"],
    ]

    static let createVersions = "CREATE TABLE IF NOT EXISTS herald_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
    static let currentVersion = "SELECT COALESCE(MAX(version), 0)::INTEGER FROM herald_schema"

    // MARK: Devices

    static let deviceColumns = "app, token, user_id, tags, badge, status, reason, invalidated_at, created_at, updated_at"

    /// Upserts a batch given as arrays (app, token, user, tags, badge; time): a value to keep is
    /// sent as chr(1) (text) or -1 (badge), since array elements cannot be NULL here, and becomes
    /// NULL, which keeps what is stored; registering makes the device active again.
    static let upsertDevices = """
        INSERT INTO devices (app, token, user_id, tags, badge, status, created_at, updated_at)
        SELECT $1, token, NULLIF(user_id, chr(1)), NULLIF(tags, chr(1)), NULLIF(badge, -1), 0, $6, $6
        FROM UNNEST($2::TEXT[], $3::TEXT[], $4::TEXT[], $5::INTEGER[]) AS t(token, user_id, tags, badge)
        ON CONFLICT (app, token) DO UPDATE SET
            user_id = COALESCE(EXCLUDED.user_id, devices.user_id),
            tags = COALESCE(EXCLUDED.tags, devices.tags),
            badge = COALESCE(EXCLUDED.badge, devices.badge),
            status = 0, reason = NULL, invalidated_at = NULL,
            updated_at = EXCLUDED.updated_at
        """
    static let deleteTags = "DELETE FROM device_tags WHERE app = $1 AND token = ANY($2::TEXT[])"
    static let insertTags = """
        INSERT INTO device_tags (app, tag, token) SELECT $1, tag, token FROM UNNEST($2::TEXT[], $3::TEXT[]) AS t(token, tag)
        ON CONFLICT DO NOTHING
        """

    /// `Unregistered`: only if the device has not registered since APNs's timestamp (apns-spec §1.6).
    static let unregisterDevices = """
        UPDATE devices d SET status = 1, reason = r.reason, invalidated_at = r.at
        FROM UNNEST($2::TEXT[], $3::TEXT[], $4::BIGINT[]) AS r(token, reason, at)
        WHERE d.app = $1 AND d.token = r.token AND d.status = 0 AND d.updated_at <= r.at
        """
    static let invalidateDevices = """
        UPDATE devices d SET status = 2, reason = r.reason
        FROM UNNEST($2::TEXT[], $3::TEXT[]) AS r(token, reason)
        WHERE d.app = $1 AND d.token = r.token AND d.status = 0
        """

    // MARK: Notifications

    static let notificationColumns = """
        id, app, audience_kind, audience, payload, push_type, priority, expiration, collapse_id, badge_mode, \
        idempotency_key, status, targeted, accepted, rejected, failed, deadline, created_at, finished_at
        """

    static let countTagged = """
        SELECT COUNT(DISTINCT t.token) FROM device_tags t JOIN devices d ON d.app = t.app AND d.token = t.token
        WHERE t.app = $1 AND t.tag = ANY($2::TEXT[]) AND d.status = 0
        """

    static let insertDeliveries = """
        INSERT INTO deliveries (notification_id, token, state, next_attempt_at, reason, finished_at)
        SELECT $1, token, state, $2, NULLIF(reason, ''), CASE WHEN state = 0 THEN NULL ELSE $2 END
        FROM UNNEST($3::TEXT[], $4::SMALLINT[], $5::TEXT[]) AS t(token, state, reason)
        ON CONFLICT DO NOTHING
        """

    static let leasedWork = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = $1 AND state = 1 AND lease_expires_at > $2)
            + (SELECT COUNT(*) FROM segments WHERE notification_id = $1 AND state = 1 AND lease_expires_at > $2)
        """
    static let unfinishedWork = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE notification_id = $1 AND state < 2)
            + (SELECT COUNT(*) FROM segments WHERE notification_id = $1 AND state < 2)
        """
    static let finishNotification = """
        UPDATE notifications SET status = 2, finished_at = $1,
            targeted = CASE WHEN audience_kind >= 2 THEN accepted + rejected + failed ELSE targeted END
        WHERE id = $2 AND status < 2
        """

    // MARK: Queue

    /// Deliveries due, and those whose lease ran out, oldest first; rows another worker is
    /// claiming are skipped, not waited for.
    static let claimDeliveries = """
        UPDATE deliveries SET state = 1, lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1
        WHERE id IN (
            SELECT id FROM deliveries
            WHERE (state = 0 AND next_attempt_at <= $3) OR (state = 1 AND lease_expires_at <= $3)
            ORDER BY next_attempt_at, id LIMIT $4
            FOR UPDATE SKIP LOCKED)
        RETURNING id, notification_id, token, attempts, badge
        """

    /// The next range due (or whose lease ran out) of a notification not cancelled: the one
    /// claimed longest ago (never claimed first), so every broadcast under way gets its turn; a
    /// range whose lease ran out before all (what a lost worker held is sent again first).
    static let claimSegment = """
        WITH picked AS (
            SELECT s.notification_id, s.number, s.state AS previous FROM segments s
            JOIN notifications n ON n.id = s.notification_id AND n.status < 2
            WHERE s.state = 0 OR (s.state = 1 AND s.lease_expires_at <= $3)
            ORDER BY s.state DESC, s.last_claimed_at, s.number, s.created_at LIMIT 1
            FOR UPDATE OF s SKIP LOCKED)
        UPDATE segments s SET state = 1, lease_owner = $1, lease_expires_at = $2, attempts = s.attempts + 1, last_claimed_at = $3
        FROM picked WHERE s.notification_id = picked.notification_id AND s.number = picked.number
        RETURNING s.notification_id, s.number, s.upper, s.cursor, picked.previous, s.raised_through
        """

    /// The next active devices of a range, as one comma-separated row (a batch costs one row to
    /// hand over, not thousands) with the last of them, where the range goes on next time.
    static let rangeOfAll = """
        SELECT COALESCE(string_agg(token, ','), ''), max(token) FROM (
            SELECT token FROM devices WHERE app = $1 AND status = 0 AND token > $2 AND ($3::TEXT IS NULL OR token < $3)
            ORDER BY token LIMIT $4) AS range
        """
    static let rangeOfTags = """
        SELECT COALESCE(string_agg(token, ','), ''), max(token) FROM (
            SELECT DISTINCT t.token FROM device_tags t JOIN devices d ON d.app = t.app AND d.token = t.token
            WHERE t.app = $1 AND t.token > $2 AND ($3::TEXT IS NULL OR t.token < $3) AND d.status = 0 AND t.tag = ANY($5::TEXT[])
            ORDER BY t.token LIMIT $4) AS range
        """

    /// Raises the badges of the devices `$2` of app `$1` by one (only those above `$3` unless it
    /// is NULL), and returns the badge of every device of `$2`. A badge stops at the largest APNs
    /// accepts (one more would overflow the column and fail the claim). Each claim raises a
    /// device once per delivery row (which keeps the raised badge) or range (which keeps how far
    /// it raised), so a notification claimed after a later one still raises, and a re-claim
    /// after a lease ran out does not.
    static let raiseBadges = """
        WITH raised AS (
            UPDATE devices SET badge = \(badgeInRange(maximum: DeviceRegistration.maximumBadge - 1)) + 1
            WHERE app = $1 AND token = ANY($2::TEXT[]) AND ($3::TEXT IS NULL OR token > $3)
            RETURNING token, badge)
        SELECT token, badge FROM raised
        UNION ALL
        SELECT token, \(badgeInRange(maximum: DeviceRegistration.maximumBadge)) FROM devices
        WHERE app = $1 AND token = ANY($2::TEXT[]) AND token NOT IN (SELECT token FROM raised)
        """
    static let raisedThrough = """
        UPDATE segments SET raised_through = $3 WHERE notification_id = $1 AND number = $2 AND (raised_through IS NULL OR raised_through < $3)
        """
    /// Locks the devices (app, token) of a claim in one order, before their badges are raised a
    /// notification at a time: two claims raising the same devices never wait for each other.
    static let lockDevices = """
        SELECT 1 FROM devices WHERE (app, token) IN (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[])) ORDER BY app, token FOR UPDATE
        """

    /// A device's stored badge (none: 0) brought into 0...`maximum`.
    static func badgeInRange(maximum: Int) -> String {
        "LEAST(GREATEST(COALESCE(badge, 0), 0), \(maximum))"
    }

    /// A batch of delivery outcomes, each only while this worker still leases the row.
    static let finishDeliveries = """
        UPDATE deliveries d SET state = o.state, reason = NULLIF(o.reason, ''), apns_id = NULLIF(o.apns_id, ''),
            finished_at = CASE WHEN o.state = 0 THEN NULL ELSE $2 END,
            next_attempt_at = COALESCE(NULLIF(o.next_attempt_at, -1), d.next_attempt_at), lease_owner = NULL, lease_expires_at = NULL
        FROM UNNEST($3::BIGINT[], $4::SMALLINT[], $5::TEXT[], $6::TEXT[], $7::BIGINT[]) AS o(id, state, reason, apns_id, next_attempt_at)
        WHERE d.id = o.id AND d.lease_owner = $1 AND d.state = 1
        RETURNING d.state, d.reason
        """
    /// A range's devices that did not end as plain acceptances, kept for listing and retries,
    /// with the badge they were sent (-1: none), which a retry sends again.
    static let insertRangeDeliveries = """
        INSERT INTO deliveries (notification_id, token, state, attempts, next_attempt_at, reason, apns_id, finished_at, badge)
        SELECT $1, token, state, CASE WHEN state = 0 THEN 1 ELSE 0 END, COALESCE(NULLIF(next_attempt_at, -1), $2),
            NULLIF(reason, ''), NULLIF(apns_id, ''),
            CASE WHEN state = 0 THEN NULL ELSE $2 END, NULLIF(badge, -1)
        FROM UNNEST($3::TEXT[], $4::SMALLINT[], $5::TEXT[], $6::TEXT[], $7::BIGINT[], $8::INTEGER[]) AS o(token, state, reason, apns_id, next_attempt_at, badge)
        ON CONFLICT (notification_id, token) DO UPDATE SET state = EXCLUDED.state, attempts = EXCLUDED.attempts,
            next_attempt_at = EXCLUDED.next_attempt_at, reason = EXCLUDED.reason, apns_id = EXCLUDED.apns_id,
            finished_at = EXCLUDED.finished_at, badge = EXCLUDED.badge
        """
    static let addReasons = """
        INSERT INTO notification_reasons (notification_id, reason, count)
        SELECT $1, reason, count FROM UNNEST($2::TEXT[], $3::BIGINT[]) AS r(reason, count)
        ON CONFLICT (notification_id, reason) DO UPDATE SET count = notification_reasons.count + EXCLUDED.count
        """

    /// Stops a notification's unsent deliveries ($2) with reason $3 at $1, and its unread
    /// ranges. Rows a claim holds at that moment are skipped, not waited for: they are in flight
    /// (and what is in flight finishes), and a cancel that waited for a claim while holding the
    /// notification's row, which the claim then waits for, would deadlock.
    static let cancelDeliveries = """
        UPDATE deliveries SET state = \(StoreCodes.failed), reason = $3, finished_at = $1, lease_owner = NULL
        WHERE id IN (
            SELECT id FROM deliveries WHERE notification_id = $2 AND state = \(StoreCodes.pending)
            FOR UPDATE SKIP LOCKED)
        RETURNING id
        """
    static let cancelSegments = """
        UPDATE segments SET state = \(StoreCodes.segmentDone)
        WHERE notification_id = $1 AND number IN (
            SELECT number FROM segments WHERE notification_id = $1 AND state = \(StoreCodes.pending)
            FOR UPDATE SKIP LOCKED)
        """

    /// Claimed deliveries (by ID, with a reason each) that cannot be sent, while $1 holds them.
    static let failClaimed = """
        UPDATE deliveries d SET state = \(StoreCodes.failed), reason = o.reason, finished_at = $2, lease_owner = NULL, lease_expires_at = NULL
        FROM UNNEST($3::BIGINT[], $4::TEXT[]) AS o(id, reason)
        WHERE d.id = o.id AND d.lease_owner = $1 AND d.state = \(StoreCodes.claimed)
        RETURNING d.id
        """
    static let endClaimedSegment = """
        UPDATE segments SET state = \(StoreCodes.segmentDone), lease_owner = NULL, lease_expires_at = NULL
        WHERE notification_id = $1 AND number = $2 AND lease_owner = $3 AND state = \(StoreCodes.claimed)
        """

    // MARK: Retention

    static let purgeDeliveries = """
        DELETE FROM deliveries WHERE id IN (
            SELECT d.id FROM deliveries d JOIN notifications n ON n.id = d.notification_id
            WHERE n.finished_at IS NOT NULL AND n.finished_at < $1 LIMIT $2)
        """
    static let purgeNotifications = """
        SELECT id FROM notifications n WHERE finished_at IS NOT NULL AND finished_at < $1
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id) LIMIT $2
        """
}
