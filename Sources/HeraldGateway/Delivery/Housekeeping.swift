import HeraldStore
import Logging
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The gateway's background chores, one task per process:
///
/// - The queue's gauges (pending deliveries and ranges, active notifications) are read from the
///   database every ``HousekeepingSettings/statisticsInterval``, never per scrape: a scrape of
///   `/metrics` costs no query, however often it comes.
/// - Retention runs every ``HousekeepingSettings/purgeInterval``: finished notifications, their
///   outcomes and retired devices older than `queue.retention` are deleted in transactions of
///   ``HousekeepingSettings/purgeBatchSize`` rows, with a pause between them, so no long
///   transaction or lock stalls sending. Rows purged are counted in `herald_purged_rows_total`.
/// - Each day, a certificate within 30 days of its expiry is warned of (``CredentialExpiry``).
/// - Every ``HousekeepingSettings/staleInterval``, what frequency caps counted and digests held
///   that no window reaches any more is deleted (``purgeScreening(now:)``), and each app's devices not registered again for
///   longer than it keeps a silent device of their platform (`staleDeviceDays`: FCM's 270 days
///   by default) are retired as `Stale` (``retireStale(now:)``).
///
/// Every process runs it; on PostgreSQL two processes purging at once only share the rows.
struct Housekeeping: Service {
    let store: HeraldStore
    let settings: HousekeepingSettings
    let retention: Duration
    let metrics: GatewayMetrics
    let backlog: AppBacklog
    let logger: Logger
    /// The apps in force, whose certificates it warns of.
    var live: LiveConfiguration? = nil

    func run() async {
        let clock = ContinuousClock()
        var nextStatistics = clock.now
        var nextPurge = clock.now + settings.purgeInterval
        var nextCredentialCheck = clock.now
        var nextStale = clock.now + settings.purgeInterval
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let now = clock.now
            if now >= nextCredentialCheck {
                warnOfExpiringCredentials()
                nextCredentialCheck = clock.now + CredentialExpiry.warningInterval
            }
            if now >= nextStatistics {
                await refreshStatistics()
                nextStatistics = clock.now + settings.statisticsInterval
            }
            if now >= nextPurge {
                await purge()
                nextPurge = clock.now + settings.purgeInterval
            }
            if now >= nextStale {
                await retireStale()
                await purgeScreening()
                nextStale = clock.now + settings.staleInterval
            }
            let wake = min(nextStatistics, nextPurge, nextCredentialCheck, nextStale)
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(until: wake, clock: clock) }
        }
    }

    /// Logs a warning for each credential within 30 days of its expiry.
    func warnOfExpiringCredentials(now: Date = Date()) {
        for credential in CredentialExpiry.of(live?.configuration.apps ?? []) {
            if let warning = credential.warning(now: now) {
                logger.warning("\(warning)", metadata: ["app": "\(credential.app)", "expiry": "\(credential.expiry)"])
            }
        }
    }

    /// Retires each app's devices silent past its `staleDeviceDays` for their platform, batch by
    /// batch (bounded per run like the purge); returns how many.
    @discardableResult
    func retireStale(now: Date = Date()) async -> Int {
        guard let apps = live?.configuration.apps else { return 0 }
        var total = 0
        for app in apps {
            for (platform, days) in app.staleDeviceDays.sorted(by: { $0.key.code < $1.key.code }) where days > 0 {
                let cutoff = now.addingTimeInterval(-Double(days) * 86400)
                for _ in 0..<settings.maximumBatchesPerRun {
                    if Task.isShuttingDownGracefully || Task.isCancelled { return total }
                    let retired: Int
                    do {
                        retired = try await store.retireStaleDevices(app: app.id, platform: platform, notUpdatedSince: cutoff, limit: settings.purgeBatchSize, now: now)
                    } catch {
                        logger.warning("cannot retire stale devices; retrying at the next interval", metadata: ["error": "\(error)"])
                        return total
                    }
                    total += retired
                    if retired > 0 {
                        logger.info("retired stale devices", metadata: ["app": "\(app.id)", "platform": "\(platform)", "devices": "\(retired)", "days": "\(days)"])
                    }
                    if retired < settings.purgeBatchSize { break }
                    try? await Task.sleep(for: settings.purgePause)
                }
            }
        }
        return total
    }

    /// Reads the queue's depth once; a database that does not answer leaves the last values.
    func refreshStatistics() async {
        do {
            metrics.recordQueue(try await store.statistics())
            backlog.replace(with: try await store.pendingDeliveriesByApp())
        } catch {
            logger.debug("cannot read the queue's statistics", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes what frequency caps counted and digests held that is older than the retention (no
    /// window reaches it), batch by batch; returns how many rows went. Hourly, with the stale
    /// devices: finding them reads the whole of both tables.
    @discardableResult
    func purgeScreening(now: Date = Date()) async -> Int {
        let (whole, fraction) = retention.components
        let cutoff = now.addingTimeInterval(-(Double(whole) + Double(fraction) / 1e18))
        var total = 0
        for _ in 0..<settings.maximumBatchesPerRun {
            if Task.isShuttingDownGracefully || Task.isCancelled { break }
            do {
                // What caps counted and digests held, and the event stream's lines, older than the retention.
                let purged = try await store.purgeScreening(before: cutoff, limit: settings.purgeBatchSize)
                    + store.purgeEvents(before: cutoff, limit: settings.purgeBatchSize)
                metrics.recordPurged(purged)
                total += purged
                if purged < settings.purgeBatchSize { break }
            } catch {
                logger.warning("cannot purge what caps counted; retrying at the next interval", metadata: ["error": "\(error)"])
                break
            }
            try? await Task.sleep(for: settings.purgePause)
        }
        return total
    }

    /// Purges everything that fell due, batch by batch; returns how many rows went.
    @discardableResult
    func purge(now: Date = Date()) async -> Int {
        let (whole, fraction) = retention.components
        let cutoff = now.addingTimeInterval(-(Double(whole) + Double(fraction) / 1e18))
        var total = 0
        let started = ContinuousClock.now
        var longest = Duration.zero
        // Bounded in count as well as by what is due: a purge that cannot keep up resumes at
        // the next interval rather than holding the task.
        for _ in 0..<settings.maximumBatchesPerRun {
            if Task.isShuttingDownGracefully || Task.isCancelled { break }
            let purged: Int
            let fullest: Int
            let batchStarted = ContinuousClock.now
            do {
                // Each purge is counted as soon as it commits, not after the next one.
                let finished = try await store.purgeOnce(finishedBefore: cutoff, limit: settings.purgeBatchSize)
                metrics.recordPurged(finished)
                let retired = try await store.purgeRetiredDevices(before: cutoff, limit: settings.purgeBatchSize)
                metrics.recordPurged(retired)
                // An ended Live Activity's tokens go at its dismissal date, not after retention.
                let dismissed = try await store.forgetDismissedActivities(now: now, limit: settings.purgeBatchSize)
                metrics.recordPurged(dismissed)
                purged = finished + retired + dismissed
                fullest = max(finished, retired, dismissed)
                longest = max(longest, ContinuousClock.now - batchStarted)
            } catch {
                logger.warning("cannot purge; retrying at the next interval", metadata: ["error": "\(error)"])
                break
            }
            total += purged
            if fullest < settings.purgeBatchSize { break }  // no kind has a full batch left
            // Let workers' writes in between batches (SQLite has one writer).
            try? await Task.sleep(for: settings.purgePause)
        }
        if total > 0 {
            // The longest batch is the longest any lock of the purge was held.
            logger.info("purged", metadata: ["rows": "\(total)", "took": "\(ContinuousClock.now - started)", "longestBatch": "\(longest)"])
        }
        return total
    }
}

/// How often the gateway's background chores run; see ``Housekeeping``.
public struct HousekeepingSettings: Sendable, Hashable {
    /// How often the queue's gauges are read from the database. Default 10 s.
    public var statisticsInterval: Duration = .seconds(10)
    /// How often devices silent past their app's `staleDeviceDays` are retired. Default an hour:
    /// each pass reads every device of the platforms it covers.
    public var staleInterval: Duration = .seconds(3600)
    /// How often retention runs. Default 60 s, so a row is purged at most a minute after it falls due.
    public var purgeInterval: Duration = .seconds(60)
    /// Rows deleted per transaction. Default 1,000.
    public var purgeBatchSize = 1000
    /// The pause between two purge transactions. Default 50 ms.
    public var purgePause: Duration = .milliseconds(50)
    /// Transactions per run at most (a backlog is taken over several runs). Default 1,000.
    public var maximumBatchesPerRun = 1000

    public init() {}
}
