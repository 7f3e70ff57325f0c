/// The PostgreSQL schema, as numbered migrations (append-only, each applied once in order under an
/// advisory lock). Times are milliseconds since the epoch; statuses and
/// states are the codes of ``StoredCode``. The queries are the engine's
/// (``QueueStatements``), written once for both databases.
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
        // 4: a broadcast is cut by a hash of the address (``KeySpace``), not by the token's first
        // digit: each device and tag row keeps its hash (filled in by the engine for rows from
        // before), a range is lower_hash..<upper_hash, read after (cursor_hash, cursor). A broadcast
        // under way when this runs starts again as one range (its devices may get it twice:
        // at least once, with its ID as collapse ID).
        [
            "ALTER TABLE devices ADD COLUMN hash BIGINT",
            "ALTER TABLE device_tags ADD COLUMN hash BIGINT",
            "CREATE INDEX devices_hash ON devices (app, hash, token) WHERE status = 0",
            "CREATE INDEX device_tags_hash ON device_tags (app, tag, hash, token)",
            // Rows still to be given a hash: empty once the engine has, so finding none at each
            // start costs a look at an empty index, not a scan of the registry.
            "CREATE INDEX devices_unhashed ON devices (app, token) WHERE hash IS NULL",
            "CREATE INDEX device_tags_unhashed ON device_tags (app, token) WHERE hash IS NULL",
            "ALTER TABLE segments ADD COLUMN lower_hash BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE segments ADD COLUMN upper_hash BIGINT NOT NULL DEFAULT 4294967296",
            "ALTER TABLE segments ADD COLUMN cursor_hash BIGINT NOT NULL DEFAULT -1",
            "ALTER TABLE segments ADD COLUMN raised_hash BIGINT",
            "ALTER TABLE segments ADD COLUMN read_hash BIGINT",
            "UPDATE segments SET state = 2, lease_owner = NULL WHERE state < 2 AND number > 0",
            "UPDATE segments SET cursor = '', raised_through = NULL WHERE state < 2",
        ],
        // 5: which of an app's tokens a device is (``KindCode``; every device stored before is an
        // alert token), for a Live Activity push-to-start token its attributes type, and the
        // environment its token belongs to (``EnvironmentCode``; NULL: the app's), which each
        // delivery keeps. A broadcast reads the devices of its push type's kind, from an index
        // that holds it.
        [
            "ALTER TABLE devices ADD COLUMN kind SMALLINT NOT NULL DEFAULT 0",
            "ALTER TABLE devices ADD COLUMN activity_type TEXT",
            "ALTER TABLE devices ADD COLUMN environment SMALLINT",
            "ALTER TABLE deliveries ADD COLUMN environment SMALLINT",
            // An app's notifications, newest first (``QueueStatements/listNotifications(status:)``).
            "CREATE INDEX notifications_app ON notifications (app, id)",
            "DROP INDEX devices_hash",
            "CREATE INDEX devices_hash ON devices (app, kind, hash, token) WHERE status = 0",
        ],
        // 6: deliveries ended per app and minute (``QueueStatements/recordMinute``), for the
        // console's chart. Completions write a row of one of a few shards, so workers of several
        // processes finishing batches of different notifications in the same minute seldom wait
        // for each other's row lock.
        [
            """
            CREATE TABLE delivery_minutes (
                app TEXT NOT NULL, minute BIGINT NOT NULL, shard BIGINT NOT NULL,
                accepted BIGINT NOT NULL, rejected BIGINT NOT NULL, failed BIGINT NOT NULL,
                PRIMARY KEY (app, minute, shard)
            )
            """,
        ],
        // 7: Live Activities: each activity an app reported update tokens for, its state, and
        // its tokens (``LiveActivity``); a notification's activity type, for a start that goes
        // to the push-to-start tokens of one attributes type; broadcast channels.
        [
            """
            CREATE TABLE activities (
                app TEXT NOT NULL, id TEXT NOT NULL, state SMALLINT NOT NULL,
                created_at BIGINT NOT NULL, ended_at BIGINT, dismissal_at BIGINT,
                PRIMARY KEY (app, id)
            )
            """,
            """
            CREATE TABLE activity_tokens (
                app TEXT NOT NULL, activity_id TEXT NOT NULL, token TEXT NOT NULL, user_id TEXT, environment SMALLINT,
                created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
                PRIMARY KEY (app, activity_id, token)
            )
            """,
            // Ended activities whose tokens are due to be forgotten.
            "CREATE INDEX activities_dismissal ON activities (dismissal_at) WHERE state = 1",
            "ALTER TABLE notifications ADD COLUMN activity_type TEXT",
            // iOS 18 broadcast channels created at APNs (``StoredChannel``).
            """
            CREATE TABLE channels (
                app TEXT NOT NULL, id TEXT NOT NULL, environment SMALLINT NOT NULL, storage_policy SMALLINT NOT NULL, created_at BIGINT NOT NULL,
                PRIMARY KEY (app, id)
            )
            """,
        ],
        // 8: a browser's Web Push subscription (``WebPushAddress``, its stored JSON) on the
        // device it is registered as; NULL for an APNs token.
        [
            "ALTER TABLE devices ADD COLUMN web_push TEXT",
            // Of a notification's outcomes, its browsers' (``NotificationCounts/browsers``).
            "ALTER TABLE notifications ADD COLUMN webpush_accepted BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN webpush_rejected BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN webpush_failed BIGINT NOT NULL DEFAULT 0",
            // A notification's options for browsers (``NotificationRequest/webPush``), JSON.
            "ALTER TABLE notifications ADD COLUMN web_push TEXT",
        ],
        // 9: an Android device's FCM registration token (``FCMAddress``) on the device it is
        // registered as; NULL for the others.
        [
            "ALTER TABLE devices ADD COLUMN fcm_token TEXT",
            // Of a notification's outcomes, its Android devices' (``NotificationCounts/android``).
            "ALTER TABLE notifications ADD COLUMN fcm_accepted BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN fcm_rejected BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN fcm_failed BIGINT NOT NULL DEFAULT 0",
            // A notification's refinement of Android messages (``NotificationRequest/fcm``), JSON.
            "ALTER TABLE notifications ADD COLUMN fcm TEXT",
        ],
        // 10: scheduled, local-time and paced delivery (``DeliverySchedule``).
        [
            // A device's IANA time zone; NULL: its app's default.
            "ALTER TABLE devices ADD COLUMN time_zone TEXT",
            // A notification's schedule, JSON; NULL: sent at once.
            "ALTER TABLE notifications ADD COLUMN schedule TEXT",
            // A broadcast's range is not read before it (a later start, or its turn in a pace).
            "ALTER TABLE segments ADD COLUMN ready_at BIGINT NOT NULL DEFAULT 0",
            // Where each app with a rate ceiling has sent (or reserved) up to: its next free time.
            "CREATE TABLE app_pacing (app TEXT PRIMARY KEY, next_free BIGINT NOT NULL)",
        ],
        // 11: the webhook outbox: one row per event and webhook that wants it (``WebhookInterest``),
        // written in the transaction of the change it reports, deleted once sent or given up on.
        // A row is due at next_attempt_at; a sender's claim moves it to the end of its lease.
        [
            """
            CREATE TABLE webhook_events (
                id TEXT NOT NULL,             -- evt_…, the same on every attempt
                hook TEXT NOT NULL,           -- the webhook's key: its URL
                app TEXT NOT NULL,
                type SMALLINT NOT NULL,
                body TEXT NOT NULL,           -- the JSON sent, every attempt the same
                created_at BIGINT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                lease_owner TEXT,
                last_error TEXT,
                PRIMARY KEY (id, hook)
            )
            """,
            "CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at)",
        ],
        // 12: a broadcast's range is read from the index alone (an index-only scan): the index
        // holds each device's environment too. Read through the table, each of a batch's devices
        // was another heap page (the table is in registration order, the index in key order).
        // Pages must be marked all-visible for that, which a bulk registration does
        // (``SQLDatabase/settleDevices()``).
        [
            "DROP INDEX devices_hash",
            "CREATE INDEX devices_hash ON devices (app, kind, hash, token) INCLUDE (environment) WHERE status = 0",
        ],
        // 13: a notification's outcomes per platform, in a table keyed by platform
        // (``PlatformCode``), not two columns each for Web Push and FCM: a platform more is a
        // code, not a migration. APNs's are the notification's totals less the others', as
        // before. The counts kept in the old columns are copied; the columns stay, no longer
        // written (a process of an earlier Herald may still run beside this one on PostgreSQL).
        [
            """
            CREATE TABLE notification_platforms (
                notification_id TEXT NOT NULL, platform SMALLINT NOT NULL,
                accepted BIGINT NOT NULL DEFAULT 0, rejected BIGINT NOT NULL DEFAULT 0, failed BIGINT NOT NULL DEFAULT 0,
                PRIMARY KEY (notification_id, platform)
            )
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
            "ALTER TABLE devices ADD COLUMN platform SMALLINT NOT NULL DEFAULT 0",
            "UPDATE devices SET platform = 1 WHERE web_push IS NOT NULL",
            "UPDATE devices SET platform = 2 WHERE fcm_token IS NOT NULL",
            "ALTER TABLE deliveries ADD COLUMN platform SMALLINT NOT NULL DEFAULT 0",
            // A delivery written before has only its device's ID: the last place its form is read.
            "UPDATE deliveries SET platform = 1 WHERE token LIKE 'wp\\_%' ESCAPE '\\'",
            "UPDATE deliveries SET platform = 2 WHERE token LIKE 'fcm\\_%' ESCAPE '\\'",
            // A broadcast's range is still read from the index alone (migration 12): it holds
            // each device's platform too.
            "DROP INDEX devices_hash",
            "CREATE INDEX devices_hash ON devices (app, kind, hash, token) INCLUDE (environment, platform) WHERE status = 0",
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
            UPDATE notifications SET platform_options = json_strip_nulls(json_build_object('webpush', web_push, 'fcm', fcm))::text
            WHERE web_push IS NOT NULL OR fcm IS NOT NULL
            """,
        ],
        [
            // The push service's own ID for finding a delivery in its logs, where it gives one beside
            // the receipt: APNs's apns-unique-id (development environment only), which Apple's
            // Push Notifications Console looks a delivery log up by.
            "ALTER TABLE deliveries ADD COLUMN unique_id TEXT",
        ],
        // 16: apps defined through the gateway's admin API (``AppDefinition``): each one's
        // definition, sealed by the gateway (AES-GCM; the store never holds it in clear) with the
        // key whose fingerprint is sealed_with; the API keys made for them, as their SHA-256; and
        // one counter that every change of either raises, which each process polls to see a
        // change with one cheap read. An app being deleted keeps its row, deleting_since set,
        // until its last row elsewhere is gone, so a deletion cut short is finished later.
        [
            """
            CREATE TABLE app_definitions (
                id TEXT PRIMARY KEY,
                sealed BYTEA NOT NULL,
                sealed_with TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                deleting_since BIGINT
            )
            """,
            "CREATE TABLE app_keys (sha256 TEXT PRIMARY KEY, app TEXT NOT NULL, name TEXT NOT NULL, created_at BIGINT NOT NULL)",
            "CREATE UNIQUE INDEX app_keys_name ON app_keys (app, name)",
            "CREATE TABLE app_definitions_version (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)",
            "INSERT INTO app_definitions_version (id, version) VALUES (1, 0)",
        ],
        // 17: what people want to get (docs/gateway.md, "Templates, preferences, caps and
        // digests"): a device's language and own choices per category; a notification's content
        // (category, template as it was then, digest) and its devices not sent, by why; each
        // app's templates; each user's choices per category and platform (-1: every platform);
        // what each user (or device without one) was sent of a category lately, one row each,
        // which a cap's check locks; and each user's digest per key (the last one's holder and
        // what it held kept beside the open one, for its devices still to send).
        [
            "ALTER TABLE devices ADD COLUMN locale TEXT",
            "ALTER TABLE devices ADD COLUMN preferences TEXT",
            "ALTER TABLE notifications ADD COLUMN content TEXT",
            // The template a notification was queued with, and its data: read by workers only.
            "ALTER TABLE notifications ADD COLUMN template TEXT",
            "ALTER TABLE notifications ADD COLUMN opted_out BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN capped BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE notifications ADD COLUMN digested BIGINT NOT NULL DEFAULT 0",
            """
            CREATE TABLE templates (
                app TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, updated_at BIGINT NOT NULL,
                PRIMARY KEY (app, name)
            )
            """,
            """
            CREATE TABLE user_preferences (
                app TEXT NOT NULL, user_id TEXT NOT NULL, category TEXT NOT NULL, platform SMALLINT NOT NULL, enabled SMALLINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app, user_id, category, platform)
            )
            """,
            """
            CREATE TABLE frequency (
                app TEXT NOT NULL, subject TEXT NOT NULL, category TEXT NOT NULL, sends TEXT NOT NULL, updated_at BIGINT NOT NULL,
                PRIMARY KEY (app, category, subject)
            )
            """,
            """
            CREATE TABLE digests (
                app TEXT NOT NULL, user_id TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL, state SMALLINT NOT NULL,
                closes_at BIGINT NOT NULL, count INTEGER NOT NULL, items TEXT NOT NULL,
                last_holder TEXT NOT NULL DEFAULT '', last_count INTEGER NOT NULL DEFAULT 0, last_items TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (app, user_id, key)
            )
            """,
        ],
        // 18: receipts (docs/receipts.md): each app's receipt keys (a slot each, 0 to 15; the newest
        // signs, an older one verifies until it expires); each receipt once per device, event and
        // action, with how long after the send it came; their counts per notification, platform
        // and event; and each app's event stream, read in order from a cursor.
        // A reader takes only events of transactions older than every one still running (their
        // xid below the snapshot's xmin), in (xid, seq) order: a sequence number taken by a
        // transaction that commits later never lands behind a cursor already handed out.
        [
            """
            CREATE TABLE receipt_keys (
                app TEXT NOT NULL, slot SMALLINT NOT NULL, generation INTEGER NOT NULL, secret TEXT NOT NULL,
                created_at BIGINT NOT NULL, expires_at BIGINT,
                PRIMARY KEY (app, slot)
            )
            """,
            """
            CREATE TABLE receipts (
                notification_id TEXT NOT NULL, token TEXT NOT NULL, event SMALLINT NOT NULL, action TEXT NOT NULL,
                platform SMALLINT NOT NULL, at BIGINT NOT NULL, latency BIGINT NOT NULL,
                PRIMARY KEY (notification_id, token, event, action)
            )
            """,
            """
            CREATE TABLE receipt_counts (
                notification_id TEXT NOT NULL, platform SMALLINT NOT NULL, event SMALLINT NOT NULL, count BIGINT NOT NULL,
                PRIMARY KEY (notification_id, platform, event)
            )
            """,
            """
            CREATE TABLE events (
                seq BIGSERIAL PRIMARY KEY, xid xid8 NOT NULL DEFAULT pg_current_xact_id(), app TEXT NOT NULL, type SMALLINT NOT NULL,
                at BIGINT NOT NULL, data TEXT NOT NULL
            )
            """,
            "CREATE INDEX events_app ON events (app, xid, seq)",
            "CREATE INDEX events_at ON events (at)",
        ],
    ]

    static let createVersions = "CREATE TABLE IF NOT EXISTS herald_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
    static let currentVersion = "SELECT COALESCE(MAX(version), 0)::INTEGER FROM herald_schema"
}
