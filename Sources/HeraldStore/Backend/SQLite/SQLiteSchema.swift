/// The SQLite schema, as numbered migrations: append-only, each applied once, in order. Times are
/// milliseconds since the epoch; statuses and states are the codes of ``StoredCode``. The queries are the engine's
/// (``QueueStatements``), written once for both databases.
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
        // 4: a broadcast is cut by a hash of the address (``KeySpace``), not by the token's first
        // digit: each device and tag row keeps its hash (filled in by the engine for rows from
        // before), a range is lower_hash..<upper_hash, read after (cursor_hash, cursor). A broadcast
        // under way when this runs starts again as one range (its devices may get it twice:
        // at least once, with its ID as collapse ID).
        [
            "ALTER TABLE devices ADD COLUMN hash INTEGER",
            "ALTER TABLE device_tags ADD COLUMN hash INTEGER",
            "CREATE INDEX devices_hash ON devices (app, hash, token) WHERE status = 0",
            "CREATE INDEX device_tags_hash ON device_tags (app, tag, hash, token)",
            // Rows still to be given a hash: empty once the engine has, so finding none at each
            // start costs a look at an empty index, not a scan of the registry.
            "CREATE INDEX devices_unhashed ON devices (app, token) WHERE hash IS NULL",
            "CREATE INDEX device_tags_unhashed ON device_tags (app, token) WHERE hash IS NULL",
            "ALTER TABLE segments ADD COLUMN lower_hash INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE segments ADD COLUMN upper_hash INTEGER NOT NULL DEFAULT 4294967296",
            "ALTER TABLE segments ADD COLUMN cursor_hash INTEGER NOT NULL DEFAULT -1",
            "ALTER TABLE segments ADD COLUMN raised_hash INTEGER",
            "ALTER TABLE segments ADD COLUMN read_hash INTEGER",
            "UPDATE segments SET state = 2, lease_owner = NULL WHERE state < 2 AND number > 0",
            "UPDATE segments SET cursor = '', raised_through = NULL WHERE state < 2",
        ],
        // 5: a range is read from an index that holds all it reads. SQLite looks up the table
        // row of every entry of a partial index (its WHERE is checked again), which made reading
        // a range of a thousand devices cost a thousand B-tree descents: 12 times the covering read.
        [
            "DROP INDEX devices_hash",
            "CREATE INDEX devices_hash ON devices (app, status, hash, token)",
        ],
        // 6: devices are kept in key order, (app, hash, token), and the broadcast reads that
        // table: a bulk import of random tokens wrote two B-trees in random order (the table by
        // token, and devices_hash), and every commit rewrote nearly every page of both; now one.
        // A device is found by its hash and token (``SQLDialect/devicesInKeyOrder``); lists page
        // in key order. Rows without a hash get one first (``keyDevices(on:)``).
        [
            """
            CREATE TABLE devices_by_key (
                app TEXT NOT NULL,
                hash INTEGER NOT NULL,        -- KeySpace.hash(token)
                token TEXT NOT NULL,
                user_id TEXT,                 -- '' or NULL: none
                tags TEXT,                    -- comma-separated, sorted; '' or NULL: none
                badge INTEGER,                -- NULL: 0
                status INTEGER NOT NULL DEFAULT 0,
                reason TEXT,
                invalidated_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, hash, token)
            ) WITHOUT ROWID
            """,
            """
            INSERT INTO devices_by_key (app, hash, token, user_id, tags, badge, status, reason, invalidated_at, created_at, updated_at)
            SELECT app, hash, token, user_id, tags, badge, status, reason, invalidated_at, created_at, updated_at FROM devices
            ORDER BY app, hash, token
            """,
            "DROP TABLE devices",
            "ALTER TABLE devices_by_key RENAME TO devices",
            "CREATE INDEX devices_user ON devices (app, user_id, hash, token) WHERE user_id IS NOT NULL AND user_id <> ''",
            "CREATE INDEX devices_status ON devices (app, status, hash, token) WHERE status <> 0",
            // Always empty (hash is part of the key), so finding rows without a hash at each
            // start stays a look at an empty index.
            "CREATE INDEX devices_unhashed ON devices (app, token) WHERE hash IS NULL",
        ],
        // 7: which of an app's tokens a device is (``KindCode``; every device stored before is an
        // alert token), for a Live Activity push-to-start token its attributes type, and the
        // environment its token belongs to (``EnvironmentCode``; NULL: the app's), which each
        // delivery keeps.
        [
            "ALTER TABLE devices ADD COLUMN kind INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE devices ADD COLUMN activity_type TEXT",
            "ALTER TABLE devices ADD COLUMN environment INTEGER",
            "ALTER TABLE deliveries ADD COLUMN environment INTEGER",
            // An app's notifications, newest first (``QueueStatements/listNotifications(status:)``).
            "CREATE INDEX notifications_app ON notifications (app, id)",
        ],
        // 8: deliveries ended per app and minute (``QueueStatements/recordMinute``), for the
        // console's chart: a broadcast keeps no row per accepted device, so its outcomes are
        // counted here as they are written. A row per app, minute and shard, purged with retention.
        [
            """
            CREATE TABLE delivery_minutes (
                app TEXT NOT NULL, minute INTEGER NOT NULL, shard INTEGER NOT NULL,
                accepted INTEGER NOT NULL, rejected INTEGER NOT NULL, failed INTEGER NOT NULL,
                PRIMARY KEY (app, minute, shard)
            ) WITHOUT ROWID
            """,
        ],
        // 9: Live Activities: each activity an app reported update tokens for, its state, and
        // its tokens (``LiveActivity``); a notification's activity type, for a start that goes
        // to the push-to-start tokens of one attributes type; broadcast channels.
        [
            """
            CREATE TABLE activities (
                app TEXT NOT NULL, id TEXT NOT NULL, state INTEGER NOT NULL,
                created_at INTEGER NOT NULL, ended_at INTEGER, dismissal_at INTEGER,
                PRIMARY KEY (app, id)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE activity_tokens (
                app TEXT NOT NULL, activity_id TEXT NOT NULL, token TEXT NOT NULL, user_id TEXT, environment INTEGER,
                created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, activity_id, token)
            ) WITHOUT ROWID
            """,
            // Ended activities whose tokens are due to be forgotten.
            "CREATE INDEX activities_dismissal ON activities (dismissal_at) WHERE state = 1",
            "ALTER TABLE notifications ADD COLUMN activity_type TEXT",
            // iOS 18 broadcast channels created at APNs (``StoredChannel``).
            """
            CREATE TABLE channels (
                app TEXT NOT NULL, id TEXT NOT NULL, environment INTEGER NOT NULL, storage_policy INTEGER NOT NULL, created_at INTEGER NOT NULL,
                PRIMARY KEY (app, id)
            ) WITHOUT ROWID
            """,
        ],
        // 10: a browser's Web Push subscription (``WebPushAddress``, its stored JSON) on the
        // device it is registered as; NULL for an APNs token.
        [
            "ALTER TABLE devices ADD COLUMN web_push TEXT",
            // Of a notification's outcomes, its browsers' (``NotificationCounts/browsers``).
            "ALTER TABLE notifications ADD COLUMN webpush_accepted INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN webpush_rejected INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN webpush_failed INTEGER NOT NULL DEFAULT 0",
            // A notification's options for browsers (``NotificationRequest/webPush``), JSON.
            "ALTER TABLE notifications ADD COLUMN web_push TEXT",
        ],
        // 11: an Android device's FCM registration token (``FCMAddress``) on the device it is
        // registered as; NULL for the others.
        [
            "ALTER TABLE devices ADD COLUMN fcm_token TEXT",
            // Of a notification's outcomes, its Android devices' (``NotificationCounts/android``).
            "ALTER TABLE notifications ADD COLUMN fcm_accepted INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN fcm_rejected INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN fcm_failed INTEGER NOT NULL DEFAULT 0",
            // A notification's refinement of Android messages (``NotificationRequest/fcm``), JSON.
            "ALTER TABLE notifications ADD COLUMN fcm TEXT",
        ],
        // 12: scheduled, local-time and paced delivery (``DeliverySchedule``).
        [
            // A device's IANA time zone; NULL: its app's default.
            "ALTER TABLE devices ADD COLUMN time_zone TEXT",
            // A notification's schedule, JSON; NULL: sent at once.
            "ALTER TABLE notifications ADD COLUMN schedule TEXT",
            // A broadcast's range is not read before it (a later start, or its turn in a pace).
            "ALTER TABLE segments ADD COLUMN ready_at INTEGER NOT NULL DEFAULT 0",
            // Where each app with a rate ceiling has sent (or reserved) up to: its next free time.
            "CREATE TABLE app_pacing (app TEXT PRIMARY KEY, next_free INTEGER NOT NULL)",
        ],
        // 13: the webhook outbox: one row per event and webhook that wants it (``WebhookInterest``),
        // written in the transaction of the change it reports, deleted once sent or given up on.
        // A row is due at next_attempt_at; a sender's claim moves it to the end of its lease.
        [
            """
            CREATE TABLE webhook_events (
                id TEXT NOT NULL,             -- evt_…, the same on every attempt
                hook TEXT NOT NULL,           -- the webhook's key: its URL
                app TEXT NOT NULL,
                type INTEGER NOT NULL,
                body TEXT NOT NULL,           -- the JSON sent, every attempt the same
                created_at INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at INTEGER NOT NULL,
                lease_owner TEXT,
                last_error TEXT,
                PRIMARY KEY (id, hook)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at)",
        ],
        // 14: a notification's outcomes per platform, in a table keyed by platform
        // (``PlatformCode``), not two columns each for Web Push and FCM: a platform more is a
        // code, not a migration. APNs's are the notification's totals less the others', as
        // before. The counts kept in the old columns are copied; the columns stay, no longer
        // written (a process of an earlier Herald may still run beside this one on PostgreSQL).
        [
            """
            CREATE TABLE notification_platforms (
                notification_id TEXT NOT NULL, platform INTEGER NOT NULL,
                accepted INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (notification_id, platform)
            ) WITHOUT ROWID
            """,
            """
            INSERT INTO notification_platforms (notification_id, platform, accepted, rejected, failed)
            SELECT id, 1, webpush_accepted, webpush_rejected, webpush_failed FROM notifications
            WHERE webpush_accepted + webpush_rejected + webpush_failed > 0
            """,
            """
            INSERT INTO notification_platforms (notification_id, platform, accepted, rejected, failed)
            SELECT id, 2, fcm_accepted, fcm_rejected, fcm_failed FROM notifications
            WHERE fcm_accepted + fcm_rejected + fcm_failed > 0
            """,
            // Each device's platform (``PlatformCode``), stored when it registers: from the
            // address it registered with (a browser's subscription, an FCM registration token),
            // never from the form of its ID. Each delivery keeps its device's, for the claim.
            "ALTER TABLE devices ADD COLUMN platform INTEGER NOT NULL DEFAULT 0",
            "UPDATE devices SET platform = 1 WHERE web_push IS NOT NULL",
            "UPDATE devices SET platform = 2 WHERE fcm_token IS NOT NULL",
            "ALTER TABLE deliveries ADD COLUMN platform INTEGER NOT NULL DEFAULT 0",
            // A delivery written before has only its device's ID: the last place its form is read.
            "UPDATE deliveries SET platform = 1 WHERE token LIKE 'wp\\_%' ESCAPE '\\'",
            "UPDATE deliveries SET platform = 2 WHERE token LIKE 'fcm\\_%' ESCAPE '\\'",
        ],
        [
            // One address column whatever the platform (``DeviceAddress``): a browser's
            // subscription or an Android device's registration token, read by the device's stored
            // platform. The columns it is copied from are kept, no longer written.
            "ALTER TABLE devices ADD COLUMN address TEXT",
            "UPDATE devices SET address = COALESCE(web_push, fcm_token) WHERE web_push IS NOT NULL OR fcm_token IS NOT NULL",
            // Each platform's options for a notification, in one column as a JSON object from the
            // platform's name to its options' text (PlatformOptions); web_push and fcm are kept,
            // no longer written.
            "ALTER TABLE notifications ADD COLUMN platform_options TEXT",
            """
            UPDATE notifications SET platform_options = CASE
                WHEN web_push IS NOT NULL AND fcm IS NOT NULL THEN json_object('webpush', web_push, 'fcm', fcm)
                WHEN web_push IS NOT NULL THEN json_object('webpush', web_push)
                ELSE json_object('fcm', fcm) END
            WHERE web_push IS NOT NULL OR fcm IS NOT NULL
            """,
        ],
        [
            // The push service's own ID for finding a delivery in its logs, where it gives one beside
            // the receipt: APNs's apns-unique-id (development environment only), which Apple's
            // Push Notifications Console looks a delivery log up by.
            "ALTER TABLE deliveries ADD COLUMN unique_id TEXT",
        ],
        // 17: apps defined through the gateway's admin API (``AppDefinition``): each one's
        // definition, sealed by the gateway (AES-GCM; the store never holds it in clear) with the
        // key whose fingerprint is sealed_with; the API keys made for them, as their SHA-256; and
        // one counter that every change of either raises, which each process polls to see a
        // change with one cheap read. An app being deleted keeps its row, deleting_since set,
        // until its last row elsewhere is gone, so a deletion cut short is finished later.
        [
            """
            CREATE TABLE app_definitions (
                id TEXT PRIMARY KEY,
                sealed BLOB NOT NULL,
                sealed_with TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                deleting_since INTEGER
            ) WITHOUT ROWID
            """,
            "CREATE TABLE app_keys (sha256 TEXT PRIMARY KEY, app TEXT NOT NULL, name TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID",
            "CREATE UNIQUE INDEX app_keys_name ON app_keys (app, name)",
            "CREATE TABLE app_definitions_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)",
            "INSERT INTO app_definitions_version (id, version) VALUES (1, 0)",
        ],
        // 18: what people want to get (docs/gateway.md, "Templates, preferences, caps and
        // digests"): a device's language and own choices per category; a notification's content
        // (category, template as it was then, digest) and its devices not sent, by why; each
        // app's templates; each user's choices per category and platform (-1: every platform);
        // what each user (or device without one) was sent of a category lately, one row each,
        // which a cap's check locks (a rowid table: a broadcast rewrites its users' rows on the
        // pages they were first written to together, in the order it reads devices again, where
        // rows kept in key order would put each of a batch's users on a page of its own); and
        // each user's digest per key (the last one's holder and
        // what it held kept beside the open one, for its devices still to send).
        [
            "ALTER TABLE devices ADD COLUMN locale TEXT",
            "ALTER TABLE devices ADD COLUMN preferences TEXT",
            "ALTER TABLE notifications ADD COLUMN content TEXT",
            // The template a notification was queued with, and its data: read by workers only.
            "ALTER TABLE notifications ADD COLUMN template TEXT",
            "ALTER TABLE notifications ADD COLUMN opted_out INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN capped INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN digested INTEGER NOT NULL DEFAULT 0",
            """
            CREATE TABLE templates (
                app TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, name)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE user_preferences (
                app TEXT NOT NULL, user_id TEXT NOT NULL, category TEXT NOT NULL, platform INTEGER NOT NULL, enabled INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, user_id, category, platform)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE frequency (
                app TEXT NOT NULL, subject TEXT NOT NULL, category TEXT NOT NULL, sends TEXT NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (app, category, subject)
            )
            """,
            """
            CREATE TABLE digests (
                app TEXT NOT NULL, user_id TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL, state INTEGER NOT NULL,
                closes_at INTEGER NOT NULL, count INTEGER NOT NULL, items TEXT NOT NULL,
                last_holder TEXT NOT NULL DEFAULT '', last_count INTEGER NOT NULL DEFAULT 0, last_items TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (app, user_id, key)
            ) WITHOUT ROWID
            """,
        ],
        // 19: receipts (docs/receipts.md): each app's receipt keys (a slot each, 0 to 15; the newest
        // signs, an older one verifies until it expires); each receipt once per device, event and
        // action, with how long after the send it came; their counts per notification, platform
        // and event; and each app's event stream, read in order from a cursor.
        [
            """
            CREATE TABLE receipt_keys (
                app TEXT NOT NULL, slot INTEGER NOT NULL, generation INTEGER NOT NULL, secret TEXT NOT NULL,
                created_at INTEGER NOT NULL, expires_at INTEGER,
                PRIMARY KEY (app, slot)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE receipts (
                notification_id TEXT NOT NULL, token TEXT NOT NULL, event INTEGER NOT NULL, action TEXT NOT NULL,
                platform INTEGER NOT NULL, at INTEGER NOT NULL, latency INTEGER NOT NULL,
                PRIMARY KEY (notification_id, token, event, action)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE receipt_counts (
                notification_id TEXT NOT NULL, platform INTEGER NOT NULL, event INTEGER NOT NULL, count INTEGER NOT NULL,
                PRIMARY KEY (notification_id, platform, event)
            ) WITHOUT ROWID
            """,
            // AUTOINCREMENT: a sequence number is never given twice, even once every row is purged.
            "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, type INTEGER NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL)",
            "CREATE INDEX events_app ON events (app, seq)",
            "CREATE INDEX events_at ON events (at)",
        ],
    ]

    /// Before migration 6: gives every device without a hash (stored before migration 4, and
    /// not yet filled in by the engine) its hash, which becomes part of its key.
    static func keyDevices(on connection: any SQLConnection) async throws {
        for _ in 0..<100_000 {
            let rows = try await connection.query("SELECT app, token FROM devices WHERE hash IS NULL LIMIT 10000")
            if rows.isEmpty { return }
            for row in rows {
                let token = row.text(1) ?? ""
                try await connection.query("UPDATE devices SET hash = $3 WHERE app = $1 AND token = $2", [row[0], .text(token), .int(KeySpace.hash(token))])
            }
        }
    }

    static let createVersions = "CREATE TABLE IF NOT EXISTS herald_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
    static let currentVersion = "SELECT COALESCE(MAX(version), 0) AS version FROM herald_schema"
    static let recordVersion = "INSERT INTO herald_schema (version, applied_at) VALUES ($1, $2)"
}
