/// The webhook outbox's statements (table `webhook_events`): one row per event and webhook,
/// deleted once sent or given up on. A row is due at its `next_attempt_at`; a claim moves that
/// to the end of its lease, so one condition finds both the rows due and those whose sender's
/// lease ran out.
extension QueueStatements {
    private func w(_ index: Int, _ type: SQLType) -> String { d.element("j", index, type) }

    /// Events of app $1 at $2, rows `[id, hook, type, body]` ($3), due at once.
    var insertWebhookEvents: String {
        """
        INSERT INTO webhook_events (id, hook, app, type, body, created_at, attempts, next_attempt_at)
        SELECT \(w(0, .text)), \(w(1, .text)), $1, \(w(2, .smallint)), \(w(3, .text)), $2, 0, $2 FROM \(d.rows(3)) AS j WHERE true
        ON CONFLICT DO NOTHING
        """
    }

    /// Up to $4 events due at $3, oldest first, leased to $1 until $2; rows another sender is
    /// claiming are skipped, not waited for (as deliveries are claimed).
    var claimWebhookEvents: String {
        """
        UPDATE webhook_events SET lease_owner = $1, next_attempt_at = $2, attempts = attempts + 1
        WHERE (id, hook) IN (
            SELECT id, hook FROM webhook_events WHERE next_attempt_at <= $3 ORDER BY next_attempt_at LIMIT $4\(d.skipLocked(of: nil)))
        RETURNING \(WebhookEventColumn.selectList)
        """
    }

    /// Event $1 to hook $2 is sent or given up on, while $3 holds it.
    var deleteWebhookEvent: String {
        "DELETE FROM webhook_events WHERE id = $1 AND hook = $2 AND lease_owner = $3 RETURNING id"
    }

    /// Event $1 to hook $2 is tried again at $4 (its last error $5), while $3 holds it.
    var retryWebhookEvent: String {
        "UPDATE webhook_events SET next_attempt_at = $4, lease_owner = NULL, last_error = $5 WHERE id = $1 AND hook = $2 AND lease_owner = $3 RETURNING id"
    }

    /// Rows in app $1's outbox.
    var countAppWebhookEvents: String { "SELECT COUNT(*) FROM webhook_events WHERE app = $1" }

    /// Events in the outbox, per app and type.
    var pendingWebhookEvents: String { "SELECT app, type, COUNT(*) FROM webhook_events GROUP BY app, type" }

    /// A finished notification's devices that did not get it, by outcome and reason.
    var failureCounts: String {
        """
        SELECT state, reason, COUNT(*) FROM deliveries WHERE notification_id = $1 AND state >= \(DeliveryState.rejected)
        GROUP BY state, reason
        """
    }

    var notificationApp: String { "SELECT app FROM notifications WHERE id = $1" }

    /// What a `notification.completed` event says of notification $1.
    var completedCounts: String {
        "SELECT targeted, accepted, rejected, failed, opted_out, capped, digested FROM notifications WHERE id = $1"
    }
}

/// An event type as the outbox stores it.
enum WebhookTypeCode: Int, StoredCode {
    case notificationCompleted = 0
    case deviceRetired = 1
    case deliveryFailed = 2
    case deliveryReceipt = 3

    init(_ type: WebhookEventType) {
        switch type {
        case .notificationCompleted: self = .notificationCompleted
        case .deviceRetired: self = .deviceRetired
        case .deliveryFailed: self = .deliveryFailed
        case .deliveryReceipt: self = .deliveryReceipt
        }
    }

    var type: WebhookEventType {
        switch self {
        case .notificationCompleted: .notificationCompleted
        case .deviceRetired: .deviceRetired
        case .deliveryFailed: .deliveryFailed
        case .deliveryReceipt: .deliveryReceipt
        }
    }
}

/// A claimed webhook event, as ``QueueStatements/claimWebhookEvents`` returns it.
enum WebhookEventColumn: Int, SQLColumns {
    case id, hook, app, type, body, createdAt, attempts

    var sqlName: String {
        switch self {
        case .id: "id"
        case .hook: "hook"
        case .app: "app"
        case .type: "type"
        case .body: "body"
        case .createdAt: "created_at"
        case .attempts: "attempts"
        }
    }
}
