/// The statements of templates, preferences, frequency caps and digests (migration 18 on SQLite,
/// 17 on PostgreSQL).
extension QueueStatements {
    private func e(_ index: Int, _ type: SQLType, _ row: String = "j") -> String { d.element(row, index, type) }

    // MARK: Templates

    /// Template $2 of app $1 stored as $3 at $4: version 1, or one more than the one it replaces.
    var putTemplate: String {
        """
        INSERT INTO templates (app, name, version, body, updated_at) VALUES ($1, $2, 1, $3, $4)
        ON CONFLICT (app, name) DO UPDATE SET version = templates.version + 1, body = excluded.body, updated_at = excluded.updated_at
        RETURNING version
        """
    }
    var selectTemplate: String { "SELECT name, version, body, updated_at FROM templates WHERE app = $1 AND name = $2" }
    /// App $1's templates after name $2, by name, at most $3.
    var listTemplates: String { "SELECT name, version, body, updated_at FROM templates WHERE app = $1 AND name > $2 ORDER BY name LIMIT $3" }
    var deleteTemplate: String { "DELETE FROM templates WHERE app = $1 AND name = $2 RETURNING name" }

    // MARK: Preferences

    var deleteUserPreferences: String { "DELETE FROM user_preferences WHERE app = $1 AND user_id = $2" }
    /// User $2 of app $1's choices, rows `[category, platform (-1: every one), enabled]` ($3) at $4.
    var insertUserPreferences: String {
        """
        INSERT INTO user_preferences (app, user_id, category, platform, enabled, updated_at)
        SELECT $1, $2, \(e(0, .text)), \(e(1, .smallint)), \(e(2, .smallint)), $4 FROM \(d.rows(3)) AS j WHERE true
        """
    }
    var selectUserPreferences: String { "SELECT category, platform, enabled, updated_at FROM user_preferences WHERE app = $1 AND user_id = $2" }
    /// The choices of users $3 of app $1 for category $2.
    var preferencesOfUsers: String {
        keyed(
            "SELECT user_id, platform, enabled FROM user_preferences WHERE app = $1 AND category = $2 AND user_id IN (\(d.list(3, .text)))",
            each: 3, as: "user_id", from: "SELECT platform, enabled FROM user_preferences WHERE app = $1 AND category = $2 AND user_id = l.user_id")
    }

    /// `sql`, a statement that finds rows whose `column` is one of the list $`list`: on PostgreSQL,
    /// `row` instead (a statement with `l.<column>` for one element) run once per element, in the
    /// list's order. The tables here are new and grow fast (a broadcast writes a row per user):
    /// until they are analyzed, PostgreSQL takes the app and category to be selective, and reads
    /// every row of them for each batch (90 s for a 300,000-device broadcast, against 6 s): per
    /// element, each lookup is by the whole key whatever the statistics say. Locks, when `row`
    /// takes them, are taken in the list's order.
    private func keyed(_ sql: String, each list: Int, as column: String, from row: String) -> String {
        guard !d.forUpdate.isEmpty else { return sql }
        return "SELECT l.\(column), f.* FROM json_array_elements_text($\(list)::json) AS l(\(column)) CROSS JOIN LATERAL (\(row) OFFSET 0) AS f"
    }

    /// As ``deviceTraits``, and each device's user's choices for category $3 (`platform`,
    /// `enabled`: a row each, none for a user without a choice): one statement, not two.
    var deviceTraitsAndChoices: String {
        let choices = "SELECT platform, enabled FROM user_preferences p WHERE p.app = $1 AND p.user_id = devices.user_id AND p.category = $3"
        let join = d.forUpdate.isEmpty
            ? "LEFT JOIN user_preferences p ON p.app = $1 AND p.user_id = devices.user_id AND p.category = $3"
            : "LEFT JOIN LATERAL (\(choices) OFFSET 0) AS p ON true"
        return """
            SELECT devices.token, devices.user_id, devices.locale, devices.preferences, p.platform, p.enabled FROM devices \(join)
            WHERE devices.app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))
            """
    }

    /// The user, locale and own choices of the devices $2 (rows `[token, hash]`) of app $1.
    var deviceTraits: String {
        "SELECT token, user_id, locale, preferences FROM devices WHERE app = $1 AND \(d.devices("devices", in: 2, hashAt: 1))"
    }

    // MARK: Frequency caps

    /// Rows for subjects $3 (rows `[subject]`) of app $1 and category $2 that have none, so that
    /// each is there to be locked (PostgreSQL: two first sends at once must not both find none).
    var insertFrequency: String {
        """
        INSERT INTO frequency (app, category, subject, sends, updated_at) SELECT $1, $2, \(e(0, .text)), '', $4 FROM \(d.rows(3)) AS j WHERE true
        ON CONFLICT DO NOTHING
        """
    }
    /// What subjects $3 of app $1 were sent of category $2 lately, locked in subject order.
    var selectFrequency: String {
        keyed(
            "SELECT subject, sends FROM frequency WHERE app = $1 AND category = $2 AND subject IN (\(d.list(3, .text))) ORDER BY subject",
            each: 3, as: "subject", from: "SELECT sends FROM frequency WHERE app = $1 AND category = $2 AND subject = l.subject FOR UPDATE")
    }
    /// Rows `[subject, sends]` ($3) of app $1 and category $2, at $4.
    var upsertFrequency: String {
        """
        INSERT INTO frequency (app, category, subject, sends, updated_at) SELECT $1, $2, \(e(0, .text)), \(e(1, .text)), $4 FROM \(d.rows(3)) AS j WHERE true
        ON CONFLICT (app, category, subject) DO UPDATE SET sends = excluded.sends, updated_at = excluded.updated_at
        """
    }
    /// At most $2 rows `[app, category, subject]` not written since $1: whatever they hold is
    /// older than any window.
    var staleFrequency: String { "SELECT app, category, subject FROM frequency WHERE updated_at < $1 LIMIT $2" }
    /// The rows `[app, category, subject]` $2 still not written since $1.
    var deleteFrequencyRows: String {
        """
        DELETE FROM frequency WHERE (app, category, subject) IN (SELECT \(e(0, .text)), \(e(1, .text)), \(e(2, .text)) FROM \(d.rows(2)) AS j)
            AND updated_at < $1 RETURNING app
        """
    }

    // MARK: Digests

    /// Rows for users $3 (rows `[user]`) of app $1 and key $2 that have none (closed, so that
    /// the first notification opens one), each then there to be locked.
    var insertDigests: String {
        """
        INSERT INTO digests (app, user_id, key, holder, state, closes_at, count, items)
        SELECT $1, \(e(0, .text)), $2, '', \(DigestState.closed), 0, 0, '' FROM \(d.rows(3)) AS j WHERE true
        ON CONFLICT DO NOTHING
        """
    }
    var selectDigests: String {
        keyed(
            """
            SELECT user_id, holder, state, closes_at, count, items, last_holder, last_count, last_items,
                (SELECT status FROM notifications WHERE id = digests.holder) AS holder_status
            FROM digests WHERE app = $1 AND key = $2 AND user_id IN (\(d.list(3, .text))) ORDER BY user_id
            """,
            each: 3, as: "user_id",
            from: """
                SELECT holder, state, closes_at, count, items, last_holder, last_count, last_items,
                    (SELECT status FROM notifications WHERE id = digests.holder) AS holder_status
                FROM digests WHERE app = $1 AND key = $2 AND user_id = l.user_id FOR UPDATE
                """)
    }
    /// Rows `[user, holder, state, closes at, count, items, last holder, last count, last items]`
    /// ($3) of app $1 and key $2.
    var upsertDigests: String {
        """
        INSERT INTO digests (app, user_id, key, holder, state, closes_at, count, items, last_holder, last_count, last_items)
        SELECT $1, \(e(0, .text)), $2, \(e(1, .text)), \(e(2, .smallint)), \(e(3, .bigint)), \(e(4, .integer)), \(e(5, .text)),
            \(e(6, .text)), \(e(7, .integer)), \(e(8, .text))
        FROM \(d.rows(3)) AS j WHERE true
        ON CONFLICT (app, user_id, key) DO UPDATE SET holder = excluded.holder, state = excluded.state, closes_at = excluded.closes_at,
            count = excluded.count, items = excluded.items, last_holder = excluded.last_holder, last_count = excluded.last_count,
            last_items = excluded.last_items
        """
    }
    /// At most $2 digests `[app, user, key]` whose window ended before $1.
    var staleDigests: String { "SELECT app, user_id, key FROM digests WHERE closes_at < $1 LIMIT $2" }
    /// The digests `[app, user, key]` $2 whose window still ended before $1.
    var deleteDigestRows: String {
        """
        DELETE FROM digests WHERE (app, user_id, key) IN (SELECT \(e(0, .text)), \(e(1, .text)), \(e(2, .text)) FROM \(d.rows(2)) AS j)
            AND closes_at < $1 RETURNING app
        """
    }
    /// PostgreSQL: locks the digests of users $3 of app $1 and key $2, in user order as a fold
    /// locks them, and returns each one's `ctid` for ``closeDigests`` to change it by.
    var lockDigests: String {
        keyed(
            "SELECT user_id FROM digests WHERE app = $1 AND key = $2 AND user_id IN (\(d.list(3, .text))) ORDER BY user_id",
            each: 3, as: "user_id", from: "SELECT ctid::text AS row FROM digests WHERE app = $1 AND key = $2 AND user_id = l.user_id FOR UPDATE")
    }
    /// Closes the digests of users $4 of app $1 and key $2 that notification $3 holds, returning
    /// what they hold: a digest closed before (by another of the user's devices) as well, and the
    /// last one when a new one opened since its window ended (its holder not yet sent then). On
    /// PostgreSQL $4 is the rows ``lockDigests`` locked, by `ctid`: found by their address, whatever
    /// the table's statistics would make of a list of users.
    var closeDigests: String {
        let rows = d.forUpdate.isEmpty
            ? "user_id IN (\(d.list(4, .text)))" : "ctid = ANY(ARRAY(SELECT e.value::tid FROM json_array_elements_text($4::json) AS e(value)))"
        return """
            UPDATE digests SET state = CASE WHEN holder = $3 THEN \(DigestState.closed) ELSE state END
            WHERE app = $1 AND key = $2 AND (holder = $3 OR last_holder = $3) AND \(rows)
            RETURNING user_id, CASE WHEN holder = $3 THEN count ELSE last_count END, CASE WHEN holder = $3 THEN items ELSE last_items END
            """
    }
}

/// Where a user's digest for a key stands (`digests.state`).
enum DigestState: Int, StoredCode {
    /// Notifications fold into it until it closes.
    case open = 0
    /// Sent (or never opened): the next notification opens a new one.
    case closed = 1
}
