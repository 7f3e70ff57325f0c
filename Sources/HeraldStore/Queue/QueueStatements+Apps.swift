/// The statements of apps defined through the admin API (tables `app_definitions`, `app_keys`
/// and the one-row `app_definitions_version`), and of deleting every row of an app.
extension QueueStatements {
    /// The counter every change of a definition or key raises: one row, read by each process
    /// about once a second.
    var appCatalogVersion: String { "SELECT version FROM app_definitions_version WHERE id = 1" }
    var raiseAppCatalogVersion: String { "UPDATE app_definitions_version SET version = version + 1 WHERE id = 1 RETURNING version" }

    var appDefinitionSummaries: String {
        "SELECT \(AppDefinitionColumn.selectList) FROM app_definitions ORDER BY id"
    }
    /// The definitions whose IDs are in $1.
    var appDefinitionsByID: String {
        "SELECT \(AppDefinitionColumn.selectList), sealed FROM app_definitions WHERE id IN (\(d.list(1, .text))) ORDER BY id"
    }
    /// Definition $1, locked for the transaction that changes it.
    var lockAppDefinition: String {
        "SELECT \(AppDefinitionColumn.selectList) FROM app_definitions WHERE id = $1\(d.forUpdate)"
    }
    /// Defines app $1 ($2 sealed with key $3) at $4, or replaces its definition.
    var putAppDefinition: String {
        """
        INSERT INTO app_definitions (id, sealed, sealed_with, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
        ON CONFLICT (id) DO UPDATE SET sealed = excluded.sealed, sealed_with = excluded.sealed_with, updated_at = excluded.updated_at
        RETURNING \(AppDefinitionColumn.selectList)
        """
    }
    /// Definition $1 sealed again ($2 with key $3), if it is still what was read: sealed with key
    /// $4 and last replaced at $5 (a definition replaced meanwhile is left as it is).
    var resealAppDefinition: String {
        "UPDATE app_definitions SET sealed = $2, sealed_with = $3 WHERE id = $1 AND sealed_with = $4 AND updated_at = $5 AND deleting_since IS NULL RETURNING id"
    }
    /// App $1 is being deleted, as of $2 (set again as the deletion goes on).
    var markAppDeleting: String { "UPDATE app_definitions SET deleting_since = $2 WHERE id = $1 RETURNING id" }
    var deleteAppDefinition: String { "DELETE FROM app_definitions WHERE id = $1 RETURNING id" }

    var appKeys: String { "SELECT sha256, app, name, created_at FROM app_keys ORDER BY app, name" }
    /// A key for app $2 named $3, its SHA-256 (hex) $1, made at $4; nothing when the name is taken.
    var insertAppKey: String {
        "INSERT INTO app_keys (sha256, app, name, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING sha256"
    }
    var deleteAppKey: String { "DELETE FROM app_keys WHERE app = $1 AND name = $2 RETURNING sha256" }
    var deleteAppKeys: String { "DELETE FROM app_keys WHERE app = $1" }

    // MARK: Deleting an app's rows

    /// App $1's notifications not finished: cancelled before its rows go.
    var unfinishedAppNotifications: String {
        "SELECT id FROM notifications WHERE app = $1 AND status < \(NotificationState.finished) ORDER BY id"
    }
    /// Up to $2 of app $1's notifications.
    var appNotifications: String { "SELECT id FROM notifications WHERE app = $1 ORDER BY id LIMIT $2" }
    /// Up to $2 deliveries of the notifications in $1.
    var deleteNotificationDeliveries: String {
        "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE notification_id IN (\(d.list(1, .text))) LIMIT $2) RETURNING id"
    }
    /// Every delivery of the notifications in $1 (what a completion wrote since the batches above).
    var deleteAllNotificationDeliveries: String {
        "DELETE FROM deliveries WHERE notification_id IN (\(d.list(1, .text)))"
    }
    /// Up to $2 of app $1's devices, as rows `[token, hash]` for ``deleteDevices``.
    var appDevices: String { "SELECT token, hash FROM devices WHERE app = $1 LIMIT $2" }

    /// Statements that each delete up to $2 of app $1's rows of one table (by its key), returning
    /// one row per row deleted: run until one deletes fewer than $2.
    var deleteAppRows: [String] {
        [
            "DELETE FROM device_tags WHERE app = $1 AND (tag, token) IN (SELECT tag, token FROM device_tags WHERE app = $1 LIMIT $2) RETURNING token",
            """
            DELETE FROM activity_tokens WHERE app = $1 AND (activity_id, token) IN (
                SELECT activity_id, token FROM activity_tokens WHERE app = $1 LIMIT $2) RETURNING token
            """,
            "DELETE FROM activities WHERE app = $1 AND id IN (SELECT id FROM activities WHERE app = $1 LIMIT $2) RETURNING id",
            "DELETE FROM channels WHERE app = $1 AND id IN (SELECT id FROM channels WHERE app = $1 LIMIT $2) RETURNING id",
            """
            DELETE FROM webhook_events WHERE app = $1 AND (id, hook) IN (SELECT id, hook FROM webhook_events WHERE app = $1 LIMIT $2)
            RETURNING id
            """,
            """
            DELETE FROM delivery_minutes WHERE app = $1 AND (minute, shard) IN (
                SELECT minute, shard FROM delivery_minutes WHERE app = $1 LIMIT $2) RETURNING app
            """,
            "DELETE FROM app_pacing WHERE app = $1 AND $2 > 0 RETURNING app",
            "DELETE FROM templates WHERE app = $1 AND name IN (SELECT name FROM templates WHERE app = $1 LIMIT $2) RETURNING name",
            """
            DELETE FROM user_preferences WHERE app = $1 AND (user_id, category, platform) IN (
                SELECT user_id, category, platform FROM user_preferences WHERE app = $1 LIMIT $2) RETURNING app
            """,
            """
            DELETE FROM frequency WHERE app = $1 AND (category, subject) IN (SELECT category, subject FROM frequency WHERE app = $1 LIMIT $2)
            RETURNING app
            """,
            "DELETE FROM digests WHERE app = $1 AND (user_id, key) IN (SELECT user_id, key FROM digests WHERE app = $1 LIMIT $2) RETURNING app",
            "DELETE FROM receipt_keys WHERE app = $1 AND slot IN (SELECT slot FROM receipt_keys WHERE app = $1 LIMIT $2) RETURNING app",
            "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE app = $1 LIMIT $2) RETURNING seq",
        ]
    }
}

/// What an app definition is read with (``QueueStatements/appDefinitionSummaries``), its sealed
/// bytes after these where asked for.
enum AppDefinitionColumn: Int, SQLColumns {
    case id, sealedWith, createdAt, updatedAt, deletingSince

    var sqlName: String {
        switch self {
        case .id: "id"
        case .sealedWith: "sealed_with"
        case .createdAt: "created_at"
        case .updatedAt: "updated_at"
        case .deletingSince: "deleting_since"
        }
    }
}
