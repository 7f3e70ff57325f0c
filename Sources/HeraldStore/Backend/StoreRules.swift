import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What both backends store the same way: the small integers for statuses and states, how an
/// audience is written down, and how a broadcast is cut into key ranges.
enum StoreCodes {
    // Device status.
    static func code(_ status: DeviceStatus) -> Int {
        switch status {
        case .active: 0
        case .unregistered: 1
        case .invalid: 2
        }
    }

    static func deviceStatus(_ code: Int) -> DeviceStatus {
        switch code {
        case 1: .unregistered
        case 2: .invalid
        default: .active
        }
    }

    // Notification status.
    static let queued = 0, sending = 1, done = 2, cancelled = 3

    static func notificationStatus(_ code: Int) -> NotificationStatus {
        switch code {
        case sending: .sending
        case done: .done
        case cancelled: .cancelled
        default: .queued
        }
    }

    // Delivery state.
    static let pending = 0, claimed = 1, accepted = 2, rejected = 3, failed = 4

    static func deliveryState(_ outcome: DeliveryRecord.Outcome) -> Int {
        switch outcome {
        case .accepted: accepted
        case .rejected: rejected
        case .failed: failed
        }
    }

    static func outcome(_ state: Int) -> DeliveryRecord.Outcome? {
        switch state {
        case accepted: .accepted
        case rejected: .rejected
        case failed: .failed
        default: nil
        }
    }

    // Segment state (pending and claimed as for deliveries).
    static let segmentDone = 2

    // Badge mode.
    static func code(_ mode: BadgeMode) -> Int { mode == .increment ? 1 : 0 }
    static func badgeMode(_ code: Int) -> BadgeMode { code == 1 ? .increment : .none }
    /// The badge mode of `code`, or `nil` for a code this Herald never writes.
    static func badgeMode(exactly code: Int) -> BadgeMode? {
        switch code {
        case self.code(.increment): .increment
        case self.code(.none): BadgeMode.none
        default: nil
        }
    }

    /// An audience as (kind, newline-separated values).
    static func encode(_ audience: Audience) -> (kind: Int, values: String) {
        switch audience {
        case .tokens(let tokens): (0, tokens.joined(separator: "\n"))
        case .users(let users): (1, users.joined(separator: "\n"))
        case .tags(let tags): (2, tags.joined(separator: "\n"))
        case .all: (3, "")
        }
    }

    /// Whether `kind` is one ``encode(_:)`` writes.
    static func isAudienceKind(_ kind: Int) -> Bool {
        kind >= encode(.tokens([])).kind && kind <= encode(.all).kind
    }

    static func decode(kind: Int, values: String) -> Audience {
        let list = values.isEmpty ? [] : values.split(separator: "\n").map(String.init)
        switch kind {
        case 0: return .tokens(list)
        case 1: return .users(list)
        case 2: return .tags(list)
        default: return .all
        }
    }

    /// Tags as stored in a device row: sorted, comma-separated.
    static func encode(tags: Set<String>) -> String { tags.sorted().joined(separator: ",") }
    static func decode(tags: String?) -> Set<String> {
        guard let tags, !tags.isEmpty else { return [] }
        return Set(tags.split(separator: ",").map(String.init))
    }

    /// The tokens of a comma-separated list that both backends' range queries return
    /// (hex, so split on bytes).
    static func tokens(_ list: String?) -> [String] {
        guard var list, !list.isEmpty else { return [] }
        return list.withUTF8 { bytes in
            var tokens: [String] = []
            tokens.reserveCapacity(bytes.count / 65 + 1)
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                tokens.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            return tokens
        }
    }

    /// A broadcast's key ranges: one per first hex digit of the token, so up to 16 workers can
    /// read one broadcast at once. Range `k` holds the tokens above its cursor (its first digit,
    /// which every longer token starting with it sorts after) and below the next range's digit.
    static let ranges: [(cursor: String, upper: String?)] = {
        let digits = Array("0123456789abcdef").map(String.init)
        return digits.indices.map { (digits[$0], $0 + 1 < digits.count ? digits[$0 + 1] : nil) }
    }()
}

/// Why claimed work cannot be sent: its notification is cancelled or gone, or a row holds what
/// this Herald never writes (edited by hand, or damaged). Such work is failed with ``reason`` as
/// the claim finds it, instead of being leased again and again, or failing every claim behind it.
struct Unsendable: Error, Hashable {
    var reason: String

    static let cancelled = Unsendable(reason: "Cancelled")
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
        id: String, status: Int?, app: String?, payload: [UInt8]?, pushType: String?, priority: Int?, expiration: Int?,
        collapseID: String?, badgeMode: Int?, deadline: Int64?
    ) -> Result<QueuedNotification, Unsendable> {
        switch status {
        case StoreCodes.queued, StoreCodes.sending: break
        case StoreCodes.cancelled: return .failure(.cancelled)
        case StoreCodes.done: return .failure(.quarantined("notification \(id) is done"))
        default: return .failure(.quarantined("notification \(id) has status \(status.map(String.init) ?? "none")"))
        }
        guard let app, let payload else { return .failure(.quarantined("notification \(id) has no app or payload")) }
        guard let type = pushType.flatMap(PushType.init(rawValue:)) else {
            return .failure(.quarantined("notification \(id) has push type \(String(reflecting: pushType ?? "none"))"))
        }
        guard let mode = badgeMode.flatMap(StoreCodes.badgeMode(exactly:)) else {
            return .failure(.quarantined("notification \(id) has badge mode \(badgeMode.map(String.init) ?? "none")"))
        }
        let pushPriority = priority.flatMap(PushPriority.init(rawValue:))
        guard pushPriority != nil || priority == nil else { return .failure(.quarantined("notification \(id) has priority \(priority!)")) }
        let pushExpiration = expiration.flatMap { try? PushExpiration(unixSeconds: $0) }
        guard pushExpiration != nil || expiration == nil else { return .failure(.quarantined("notification \(id) has expiration \(expiration!)")) }
        guard let deadline else { return .failure(.quarantined("notification \(id) has no deadline")) }
        return .success(
            QueuedNotification(
                id: id, app: app, payload: payload, pushType: type, priority: pushPriority, expiration: pushExpiration, collapseID: collapseID,
                badge: mode, deadline: Date(milliseconds: deadline)
            )
        )
    }

    /// Why a claimed delivery's stored badge cannot be sent, if it cannot (`nil`: not raised yet).
    static func badgeProblem(_ badge: Int?) -> Unsendable? {
        guard let badge, badge < 0 || badge > DeviceRegistration.maximumBadge else { return nil }
        return .quarantined("badge \(badge) is outside 0...\(DeviceRegistration.maximumBadge)")
    }
}

/// What a batch's outcomes do to the store, worked out once for both backends.
struct OutcomePlan {
    struct Row {
        var token: String
        var state: Int
        var reason: String?
        var apnsID: String?
        /// For retries: when to try again.
        var nextAttemptAt: Int64?
    }

    var accepted = 0
    var rejected: [String: Int] = [:]
    var failed = 0
    /// Row changes, one per device (for a range, only those that are not plain acceptances).
    var rows: [Row] = []
    var invalidations: [Invalidation] = []

    /// - Parameters:
    ///   - batch: the batch the outcomes are for: a range keeps no row for a plain acceptance.
    ///   - cancelled: the notification was cancelled meanwhile: retries end as failed.
    init(outcomes: [DeliveryOutcome], of batch: WorkBatch, cancelled: Bool, retryAt: (Int) -> Date, now: Date) {
        var keepsAccepted = true
        if case .segment = batch.source { keepsAccepted = false }
        let deadline = batch.notification.deadline
        // Attempt numbers are looked up only for retries, and only in batches that have them.
        var attempts: [String: Int]?
        for outcome in outcomes {
            switch outcome.result {
            case .accepted(let apnsID):
                accepted += 1
                if keepsAccepted { rows.append(Row(token: outcome.token, state: StoreCodes.accepted, apnsID: apnsID)) }
            case .rejected(let reason, let timestamp):
                rejected[reason, default: 0] += 1
                rows.append(Row(token: outcome.token, state: StoreCodes.rejected, reason: reason))
                if Invalidation.status(for: reason) != nil {
                    // A 410 without a usable timestamp counts from when APNs answered.
                    invalidations.append(Invalidation(token: outcome.token, reason: reason, timestamp: timestamp ?? now))
                }
            case .retry(let reason):
                if attempts == nil { attempts = Dictionary(batch.items.map { ($0.token, $0.attempt) }, uniquingKeysWith: max) }
                let next = retryAt(attempts?[outcome.token] ?? 1)
                if cancelled {
                    failed += 1
                    rows.append(Row(token: outcome.token, state: StoreCodes.failed, reason: "Cancelled"))
                } else if next >= deadline {
                    failed += 1
                    rows.append(Row(token: outcome.token, state: StoreCodes.failed, reason: "Expired (last: \(reason))"))
                } else {
                    rows.append(Row(token: outcome.token, state: StoreCodes.pending, reason: reason, nextAttemptAt: next.milliseconds))
                }
            case .failed(let reason):
                failed += 1
                rows.append(Row(token: outcome.token, state: StoreCodes.failed, reason: reason))
            }
        }
    }
}
