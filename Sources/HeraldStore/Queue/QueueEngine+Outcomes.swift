#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Leases and outcomes: renew, complete, release.
extension QueueEngine {
    func renew(_ batch: WorkBatch, leaseUntil: Date) async throws {
        let (renewed, held) = try await database.write(.bookkeeping) { [self] connection -> (Int, Int) in
            let lease: SQLValue = .int(leaseUntil.milliseconds)
            switch batch.source {
            case .deliveries(let ids):
                let renewed = try await connection.query(sql.renewDeliveries, [lease, .text(batch.owner), .ints(ids)])
                return (renewed.count, Set(ids).count)
            case .segment(let number, _, _):
                let renewed = try await connection.query(sql.renewSegment, [lease, .text(batch.notification.id), .int(number), .text(batch.owner)])
                return (renewed.count, 1)
            }
        }
        if renewed < held { throw StoreError.leaseLost(batch, renewed: renewed, of: held) }
    }

    func complete(_ batch: WorkBatch, outcomes: [DeliveryOutcome], settings: RetrySettings, now: Date) async throws {
        let retried = try await database.write(.bookkeeping) { [self] connection -> Bool in
            let id = batch.notification.id
            let time = now.milliseconds
            // The notification's row is locked first: completions of one notification take turns,
            // so the last one sees every other range done and finishes it.
            let status = try await connection.query(sql.notificationStatus, [.text(id)]).first?.int(0)
            let plan = OutcomePlan(
                outcomes: outcomes, of: batch, cancelled: NotificationState(code: status) == .cancelled || status == nil, settings: settings, now: now
            )
            var accepted = 0
            var rejected: [String: Int] = [:]
            var failed = 0
            var skipped: [SkipReason: Int] = [:]
            // Browsers' and Android devices' outcomes, counted apart: the rest are APNs devices'.
            var others = OtherPlatforms()
            // Devices that ended rejected or failed, for the app's event stream and `delivery.failed`.
            var failures: [FailedDevice] = []
            // The devices accepted, by platform, for the event stream's `accepted` line.
            var acceptedTokens: [DevicePlatform: [String]] = [:]
            switch batch.source {
            case .deliveries(let ids):
                // Only rows this worker still leases count: a lease taken over is counted by its new holder.
                let idByToken = Dictionary(zip(batch.items.map(\.token), ids), uniquingKeysWith: { first, _ in first })
                let rows: [[SQLValue]] = plan.rows.compactMap { row in
                    idByToken[row.token].map { [.int($0), .code(row.state), .text(row.reason), .text(row.receipt), .int(row.nextAttemptAt), .text(row.uniqueID)] }
                }
                for part in Self.chunks(rows) {
                    for finished in try await connection.query(sql.finishDeliveries, [.text(batch.owner), .int(time), .rows(Array(part))]) {
                        let state = DeliveryState(code: finished.int(0))
                        switch state {
                        case .accepted: accepted += 1
                        case .rejected: rejected[finished.text(1) ?? "", default: 0] += 1
                        case .failed: failed += 1
                        case .optedOut, .capped, .digested: if let skip = state?.skip { skipped[skip, default: 0] += 1 }
                        default: break
                        }
                        if let token = finished.text(2) {
                            let platform = PlatformCode.platform(finished.int(3))
                            others.count(platform, state)
                            if state == .accepted { acceptedTokens[platform, default: []].append(token) }
                            if let state { failures.append(FailedDevice(token: token, state: state, reason: finished.text(1), platform: platform)) }
                        }
                    }
                }
            case .segment(let number, let after, let exhausted):
                let advanced = try await connection.query(sql.advanceSegment, [
                    .int(after.hash), .text(after.token), .code(exhausted ? SegmentState.done : .pending), .text(id), .int(number), .text(batch.owner),
                ])
                guard !advanced.isEmpty else { throw StoreError.leaseLost(batch, renewed: 0, of: 1) }
                let left = plan.rows.filter { $0.state != .accepted }
                // The badge each device was sent, which a retry sends again (looked up only when some are kept).
                let badges = left.isEmpty || batch.notification.badge != .increment
                    ? [:] : Dictionary(batch.items.map { ($0.token, $0.badge) }, uniquingKeysWith: { first, _ in first })
                // The environment each device is sent to, which a retry keeps.
                let environments = left.isEmpty || !batch.items.contains { $0.environment != nil }
                    ? [:] : Dictionary(batch.items.map { ($0.token, $0.environment) }, uniquingKeysWith: { first, _ in first })
                // The platform of each device, when some are not APNs devices (kept by a retry, and counted).
                let platforms = !batch.items.contains { $0.platform != .apns }
                    ? [:] : Dictionary(batch.items.map { ($0.token, $0.platform) }, uniquingKeysWith: { first, _ in first })
                let kept: [[SQLValue]] = left.map { row in
                    [
                        .text(row.token), .code(row.state), .text(row.reason), .text(row.receipt), .int(row.nextAttemptAt),
                        (badges[row.token] ?? nil).map { .int($0) } ?? .null, (environments[row.token] ?? nil).map { .code(EnvironmentCode($0)) } ?? .null,
                        .code(PlatformCode(platforms[row.token] ?? .apns)),
                    ]
                }
                for part in Self.chunks(kept) { try await connection.query(sql.insertRangeDeliveries, [.text(id), .int(time), .rows(Array(part))]) }
                accepted = plan.accepted
                rejected = plan.rejected
                failed = plan.failed
                skipped = plan.skipped
                for row in plan.rows where row.state != .accepted {
                    others.count(platforms[row.token] ?? .apns, row.state)
                    failures.append(FailedDevice(token: row.token, state: row.state, reason: row.reason, platform: platforms[row.token] ?? .apns))
                }
                // Accepted range devices keep no row: counted from the outcomes.
                for outcome in outcomes {
                    guard case .accepted = outcome.result else { continue }
                    let platform = platforms.isEmpty ? .apns : platforms[outcome.token] ?? .apns
                    if !platforms.isEmpty { others.count(platform, .accepted) }
                    acceptedTokens[platform, default: []].append(outcome.token)
                }
            }
            let rejectedCount = rejected.values.reduce(0, +)
            if accepted + rejectedCount + failed > 0 {
                try await connection.query(sql.addCounts, [.int(accepted), .int(rejectedCount), .int(failed), .text(id)])
            }
            if !skipped.isEmpty { try await addSkips(skipped, to: id, on: connection) }
            if !others.isEmpty {
                let rows: [[SQLValue]] = others.counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { platform, counts in
                    [.code(PlatformCode(platform)), .int(counts.accepted), .int(counts.rejected), .int(counts.failed)]
                }
                try await connection.query(sql.addPlatformCounts, [.text(id), .rows(rows)])
            }
            if !rejected.isEmpty {
                try await connection.query(sql.addReasons, [.text(id), .rows(rejected.sorted { $0.key < $1.key }.map { [.text($0.key), .int($0.value)] })])
            }
            try await recordAccepted(app: batch.notification.app, notification: id, acceptedTokens, now: now, on: connection)
            if !failures.isEmpty { try await recordFailures(app: batch.notification.app, notification: id, failures, now: now, on: connection) }
            _ = try await invalidate(app: batch.notification.app, plan.invalidations, now: now, on: connection)
            // An update token APNs says is gone is forgotten by its activity.
            if !plan.invalidations.isEmpty, case .deliveries = batch.source,
                let audience = try await connection.query(sql.audienceOf, [.text(id)]).first,
                AudienceKind(code: audience.int(0)) == .activity, let activityID = audience.text(1)
            {
                let rows: [[SQLValue]] = plan.invalidations.map { [.text($0.token), .int(($0.timestamp ?? now).milliseconds)] }
                try await connection.query(sql.retireActivityTokens, [.text(batch.notification.app), .text(activityID), .rows(rows)])
            }
            // A range that goes on leaves its notification unfinished: nothing to look for.
            if case .segment(_, _, false) = batch.source {} else { try await finishIfDone(id, now: now, on: connection) }
            let retry = plan.rows.contains { $0.state == .pending }
            if retry { try await database.announceWork(on: connection) }
            try await recordMinute(app: batch.notification.app, accepted: accepted, rejected: rejectedCount, failed: failed, now: now, on: connection)
            return retry
        }
        if retried { database.work.signal() }
    }

    /// Counts devices not sent notification `id`, by why.
    func addSkips(_ skipped: [SkipReason: Int], to id: String, on connection: any SQLConnection) async throws {
        try await connection.query(sql.addSkips, [.int(skipped[.optedOut] ?? 0), .int(skipped[.capped] ?? 0), .int(skipped[.digested] ?? 0), .text(id)])
    }

    /// Gives a batch back unsent: another worker may take it at once.
    func release(_ batch: WorkBatch) async throws {
        try await database.write(.bookkeeping) { [self] connection in
            switch batch.source {
            case .deliveries(let ids):
                try await connection.query(sql.releaseDeliveries, [.ints(ids), .text(batch.owner)])
            case .segment(let number, _, _):
                try await connection.query(sql.releaseSegment, [.text(batch.notification.id), .int(number), .text(batch.owner)])
            }
            try await database.announceWork(on: connection)
        }
        database.work.signal()
    }
}

/// A completion's outcomes of each platform but APNs (whose are the totals less these), by the
/// platform each device registered on.
struct OtherPlatforms {
    var counts: [DevicePlatform: PlatformCounts] = [:]

    var isEmpty: Bool { counts.isEmpty }

    /// Counts a finished delivery of a device of `platform` unless it is APNs.
    mutating func count(_ platform: DevicePlatform, _ state: DeliveryState?) {
        guard platform != .apns else { return }
        switch state {
        case .accepted, .rejected, .failed: counts[platform, default: PlatformCounts()].count(state)
        default: break
        }
    }
}

extension PlatformCounts {
    /// Counts one finished delivery.
    mutating func count(_ state: DeliveryState?) {
        switch state {
        case .accepted: accepted += 1
        case .rejected: rejected += 1
        case .failed: failed += 1
        default: break
        }
    }
}
