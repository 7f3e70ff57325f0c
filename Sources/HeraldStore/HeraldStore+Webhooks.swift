#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The webhook outbox, as the gateway's sender uses it.
extension HeraldStore {
    /// Which apps' webhooks want which events: from now on, changes are reported (written to
    /// the outbox in their own transaction) for these alone. The gateway sets it from its
    /// configuration at start and on every reload. Default: none.
    public func setWebhookInterest(_ interest: WebhookInterest) {
        backend.webhookInterest = interest
    }

    /// The interest in force.
    public var webhookInterest: WebhookInterest { backend.webhookInterest }

    /// Claims up to `limit` events due at `now` for `owner`, leased for `lease` (PostgreSQL:
    /// rows another sender is claiming are skipped). An event whose sender's lease ran out is
    /// due again, with the same ID.
    package func claimWebhookEvents(owner: String, limit: Int, lease: Duration, now: Date = Date()) async throws -> [WebhookDelivery] {
        try await backend.claimWebhookEvents(owner: owner, limit: max(1, limit), leaseUntil: now.addingTimeInterval(lease.seconds), now: now)
    }

    /// An event was sent (or given up on): it leaves the outbox. `false` when `owner`'s lease
    /// on it ran out and another sender took it over.
    @discardableResult
    package func finishWebhookEvent(_ event: WebhookDelivery, owner: String) async throws -> Bool {
        try await backend.finishWebhookEvent(event, owner: owner)
    }

    /// An event is sent again at `at`; `error` says why this attempt failed (never a secret).
    @discardableResult
    package func retryWebhookEvent(_ event: WebhookDelivery, owner: String, at: Date, error: String) async throws -> Bool {
        try await backend.retryWebhookEvent(event, owner: owner, at: at, error: error)
    }

    /// Events waiting in the outbox, per app and type (for the pending gauge).
    package func pendingWebhookEvents() async throws -> [WebhookEventCount] {
        try await backend.pendingWebhookEvents()
    }

    /// Events refused since the last call because their app's outbox was full
    /// (``WebhookInterest/maximumPending``), per app and type (for the refused counter).
    package func takeRefusedWebhookEvents() -> [WebhookEventCount] {
        backend.outbox.takeRefused()
    }
}
