import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why claimed work cannot be sent: its notification is cancelled or gone, or a row holds what
/// this Herald never writes (edited by hand, or damaged). Such work is failed with ``reason`` as
/// the claim finds it, instead of being leased again and again, or failing every claim behind it.
struct Unsendable: Error, Hashable {
    var reason: String

    static let cancelled = Unsendable(reason: "Cancelled")
    /// A scheduled or held notification whose deadline came first.
    static let expired = Unsendable(reason: DeliveryReason.gateway(.expired).description)
    static func quarantined(_ what: String) -> Unsendable { Unsendable(reason: "Quarantined: \(what)") }
}

/// Claimed work that cannot be sent, for the backend to fail (``Unsendable``).
struct UnsendableWork: Sendable {
    var notificationID: String
    /// Why nothing of the notification can be sent, if so: a notification still queued or sending
    /// is then stopped as a cancel would stop it, its unsent devices failing with this reason.
    var notification: Unsendable?
    /// Claimed deliveries, and why each cannot be sent.
    var deliveries: [(id: Int64, reason: String)] = []
    /// A claimed range, which ends.
    var segment: Int?
}

extension QueuedNotification {
    /// A stored notification's fields as a worker needs them, or why its work cannot be sent.
    /// Values this Herald never writes are refused rather than guessed at: an unknown push type
    /// sent as an alert, or an unknown badge mode as none, would send the wrong notification.
    static func stored(
        id: String, status: Int64?, app: String?, payload: [UInt8]?, pushType: String?, priority: Int64?, expiration: Int64?,
        collapseID: String?, badgeMode: Int64?, deadline: Int64?
    ) -> Result<QueuedNotification, Unsendable> {
        let state = NotificationState(code: status)
        switch state {
        case .queued, .sending: break
        case .cancelled: return .failure(.cancelled)
        case .done: return .failure(.quarantined("notification \(id) is done"))
        case nil: return .failure(.quarantined("notification \(id) has status \(status.map(String.init) ?? "none")"))
        }
        guard let app, let payload else { return .failure(.quarantined("notification \(id) has no app or payload")) }
        guard let type = pushType.flatMap(PushType.init(rawValue:)) else {
            return .failure(.quarantined("notification \(id) has push type \(String(reflecting: pushType ?? "none"))"))
        }
        guard let mode = BadgeCode(code: badgeMode)?.mode else {
            return .failure(.quarantined("notification \(id) has badge mode \(badgeMode.map(String.init) ?? "none")"))
        }
        let pushPriority = priority.flatMap { Int(exactly: $0) }.flatMap(PushPriority.init(rawValue:))
        guard pushPriority != nil || priority == nil else { return .failure(.quarantined("notification \(id) has priority \(priority!)")) }
        let pushExpiration = expiration.flatMap { Int(exactly: $0) }.flatMap { try? PushExpiration(unixSeconds: $0) }
        guard pushExpiration != nil || expiration == nil else { return .failure(.quarantined("notification \(id) has expiration \(expiration!)")) }
        guard let deadline else { return .failure(.quarantined("notification \(id) has no deadline")) }
        return .success(
            QueuedNotification(
                id: id, app: app, payload: payload, pushType: type, priority: pushPriority, expiration: pushExpiration, collapseID: collapseID,
                badge: mode, deadline: Date(milliseconds: deadline), isQueued: state == .queued
            )
        )
    }

    /// Why a claimed delivery's stored badge cannot be sent, if it cannot (`nil`: not raised yet).
    static func badgeProblem(_ badge: Int64?) -> Unsendable? {
        guard let badge, badge < 0 || badge > DeviceRegistration.maximumBadge else { return nil }
        return .quarantined("badge \(badge) is outside 0...\(DeviceRegistration.maximumBadge)")
    }
}

/// What a batch's outcomes do to the store, worked out once for both backends.
struct OutcomePlan {
    struct Row {
        var token: String
        var state: DeliveryState
        var reason: String?
        var receipt: String?
        var uniqueID: String?
        /// For retries: when to try again.
        var nextAttemptAt: Int64?
    }

    var accepted = 0
    var rejected: [String: Int] = [:]
    var failed = 0
    /// Devices not sent, by why.
    var skipped: [SkipReason: Int] = [:]
    /// Row changes, one per device (for a range, only those neither accepted nor skipped: a
    /// broadcast writes no row for a device it did not send).
    var rows: [Row] = []
    var invalidations: [Invalidation] = []

    /// Carries out each outcome's ``DeliveryDecision``.
    ///
    /// - Parameters:
    ///   - batch: the batch the outcomes are for: a range keeps no row for a plain acceptance.
    ///   - cancelled: the notification was cancelled meanwhile: retries end as failed.
    ///   - random: draws each retry's jitter (a value in 0..<1).
    init(
        outcomes: [DeliveryOutcome], of batch: WorkBatch, cancelled: Bool, settings: RetrySettings, now: Date,
        random: () -> Double = { Double.random(in: 0..<1) }
    ) {
        var keepsAccepted = true
        if case .segment = batch.source { keepsAccepted = false }
        // Attempt numbers are looked up only for retries, and only in batches that have them.
        var attempts: [String: Int]?
        // By index: a copy of each outcome (`for outcome in outcomes`) retains and releases its
        // token, and most (a range's acceptances) need no more than their result.
        for index in outcomes.indices {
            var attempt = 1
            // Jitter is drawn for retries only: a random draw per accepted device would cost more than deciding.
            var jitter = 0.0
            if case .retry = outcomes[index].result {
                if attempts == nil { attempts = Dictionary(batch.items.map { ($0.token, $0.attempt) }, uniquingKeysWith: max) }
                attempt = attempts?[outcomes[index].token] ?? 1
                jitter = random()
            }
            let decision = DeliveryDecision.decide(
                outcome: outcomes[index].result, attempt: attempt, deadline: batch.notification.deadline, cancelled: cancelled, now: now,
                settings: settings, random: jitter
            )
            switch decision {
            case .accept(let receipt, let uniqueID):
                accepted += 1
                if keepsAccepted { rows.append(Row(token: outcomes[index].token, state: .accepted, receipt: receipt, uniqueID: uniqueID)) }
            case .retry(let at, let reason):
                rows.append(Row(token: outcomes[index].token, state: .pending, reason: reason.description, nextAttemptAt: at.milliseconds))
            case .retireDevice(let reason, let since):
                rejected[reason.description, default: 0] += 1
                rows.append(Row(token: outcomes[index].token, state: .rejected, reason: reason.description))
                invalidations.append(Invalidation(token: outcomes[index].token, reason: reason.description, timestamp: since))
            case .invalidateDevice(let reason):
                rejected[reason.description, default: 0] += 1
                rows.append(Row(token: outcomes[index].token, state: .rejected, reason: reason.description))
                invalidations.append(Invalidation(token: outcomes[index].token, reason: reason.description, timestamp: now))
            case .reject(let reason):
                rejected[reason.description, default: 0] += 1
                rows.append(Row(token: outcomes[index].token, state: .rejected, reason: reason.description))
            case .fail(let reason):
                failed += 1
                rows.append(Row(token: outcomes[index].token, state: .failed, reason: reason.description))
            case .skip(let reason):
                skipped[reason, default: 0] += 1
                if keepsAccepted { rows.append(Row(token: outcomes[index].token, state: DeliveryState(reason))) }
            }
        }
    }
}
