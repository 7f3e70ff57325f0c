/// The statements of receipts, their keys and counts, and the event stream (migration 19 on
/// SQLite, 18 on PostgreSQL).
extension QueueStatements {
    private func e(_ index: Int, _ type: SQLType) -> String { d.element("j", index, type) }
    /// SQLite's dialect: one writer at a time, no row locks.
    private var isSQLite: Bool { d.forUpdate.isEmpty }

    // MARK: Keys

    /// App $1's keys that still verify at $2 (newest first).
    var receiptKeys: String {
        "SELECT slot, generation, secret, created_at, expires_at FROM receipt_keys WHERE app = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY generation DESC"
    }
    /// App $1's first key (slot 0, generation 1, secret $2 at $3), unless another process made one first.
    var insertFirstReceiptKey: String {
        "INSERT INTO receipt_keys (app, slot, generation, secret, created_at) VALUES ($1, 0, 1, $2, $3) ON CONFLICT (app, slot) DO NOTHING"
    }
    /// App $1's newest key, locked while a rotation replaces it.
    var newestReceiptKey: String {
        "SELECT slot, generation FROM receipt_keys WHERE app = $1 AND expires_at IS NULL ORDER BY generation DESC LIMIT 1\(d.forUpdate)"
    }
    /// App $1's newest key, generation $2, expires at $3.
    var expireReceiptKey: String { "UPDATE receipt_keys SET expires_at = $3 WHERE app = $1 AND generation = $2" }
    /// App $1's key in slot $2 (generation $3, secret $4, at $5), replacing the one the slot held.
    var putReceiptKey: String {
        """
        INSERT INTO receipt_keys (app, slot, generation, secret, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, NULL)
        ON CONFLICT (app, slot) DO UPDATE SET generation = excluded.generation, secret = excluded.secret,
            created_at = excluded.created_at, expires_at = NULL
        """
    }

    // MARK: Receipts

    /// The apps of notifications $1.
    var notificationApps: String { "SELECT id, app FROM notifications WHERE id IN (\(d.list(1, .text)))" }
    /// The active devices of each app, token kind and key hash of rows `[app, kind, hash]` ($1):
    /// `[app, kind, hash, token]`. On PostgreSQL each is looked up on its own by the broadcast's
    /// index (app, kind, hash), whatever the statistics say.
    var devicesWithHashes: String {
        if isSQLite {
            return """
                SELECT d.app, d.kind, d.hash, d.token FROM \(d.rows(1)) AS j JOIN devices d
                ON d.app = \(e(0, .text)) AND d.hash = \(e(2, .bigint)) AND d.kind = \(e(1, .smallint)) AND d.status = \(DeviceCode.active)
                """
        }
        return """
            SELECT r.app, r.kind, r.hash, f.token
            FROM (SELECT \(e(0, .text)) AS app, \(e(1, .smallint)) AS kind, \(e(2, .bigint)) AS hash FROM \(d.rows(1)) AS j) AS r
            CROSS JOIN LATERAL (SELECT token FROM devices WHERE app = r.app AND kind = r.kind AND hash = r.hash
                AND status = \(DeviceCode.active) LIMIT 16 OFFSET 0) AS f
            """
    }
    /// Receipts, rows `[notification, token, event, action, platform, latency]` ($1), at $2; each
    /// one already counted is left out. Returns those stored now.
    var insertReceipts: String {
        """
        INSERT INTO receipts (notification_id, token, event, action, platform, at, latency)
        SELECT \(e(0, .text)), \(e(1, .text)), \(e(2, .smallint)), \(e(3, .text)), \(e(4, .smallint)), $2, \(e(5, .bigint))
        FROM \(d.rows(1)) AS j WHERE true
        ON CONFLICT (notification_id, token, event, action) DO NOTHING
        RETURNING notification_id, token, event, action, platform, latency
        """
    }
    /// Counts, rows `[notification, platform, event, count]` ($1), added.
    var addReceiptCounts: String {
        """
        INSERT INTO receipt_counts (notification_id, platform, event, count)
        SELECT \(e(0, .text)), \(e(1, .smallint)), \(e(2, .smallint)), \(e(3, .bigint)) FROM \(d.rows(1)) AS j WHERE true
        ON CONFLICT (notification_id, platform, event) DO UPDATE SET count = receipt_counts.count + excluded.count
        """
    }
    /// Notification $1's counts, `[platform, event, count]`.
    var receiptCounts: String { "SELECT platform, event, count FROM receipt_counts WHERE notification_id = $1" }
    /// The devices of notification $1 that reported any of events $2, per platform.
    var receiptDevices: String {
        "SELECT platform, COUNT(DISTINCT token) FROM receipts WHERE notification_id = $1 AND event IN (\(d.list(2, .smallint))) GROUP BY platform"
    }
    /// Up to $4 latencies of event $2 on platform $3 of notification $1, smallest first.
    var receiptLatencies: String {
        "SELECT latency FROM (SELECT latency FROM receipts WHERE notification_id = $1 AND event = $2 AND platform = $3 LIMIT $4) AS s ORDER BY latency"
    }
    /// App $1's notifications made since $3, found from ID $2 on (their UUIDv7 time: an index
    /// range, not the whole app), and their counts: `[id, targeted, accepted, created_at]`.
    var notificationsSince: String { "SELECT id, targeted, accepted, created_at FROM notifications WHERE app = $1 AND id >= $2 AND created_at >= $3" }
    /// The receipt counts of notifications $1, `[notification, event, count]`.
    var receiptCountsOf: String {
        "SELECT notification_id, event, CAST(SUM(count) AS BIGINT) FROM receipt_counts WHERE notification_id IN (\(d.list(1, .text))) GROUP BY notification_id, event"
    }
    // MARK: Event stream

    /// Events, rows `[type, data]` ($3), of app $1 at $2.
    var insertEvents: String {
        "INSERT INTO events (app, type, at, data) SELECT $1, \(e(0, .smallint)), $2, \(e(1, .text)) FROM \(d.rows(3)) AS j WHERE true"
    }
    /// App $1's events after cursor ($2, $3) (on SQLite $2 is unused: the sequence alone orders
    /// them), at most $4: `[seq, type, at, data, xid]`. On PostgreSQL only those of transactions
    /// older than every one still running.
    var readEvents: String {
        if isSQLite {
            return "SELECT seq, type, at, data, 0 FROM events WHERE app = $1 AND seq > $3 AND $2 >= 0 ORDER BY seq LIMIT $4"
        }
        return """
            SELECT seq, type, at, data, xid::text::bigint FROM events
            WHERE app = $1 AND (xid, seq) > ($2::text::xid8, $3) AND xid < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY xid, seq LIMIT $4
            """
    }
    /// Up to $2 events from before $1; returns how many.
    var purgeEvents: String {
        "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE at < $1 LIMIT $2) RETURNING seq"
    }
}
