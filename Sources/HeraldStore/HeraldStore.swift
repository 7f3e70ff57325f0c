import HeraldCore
import Logging
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A device registry and a durable delivery queue, on SQLite (one file, the embedded default) or
/// PostgreSQL (for many gateway processes sharing one database), with the same behaviour on both.
///
/// Devices are registered by app and token and pruned by APNs's rules. Notifications are stored
/// before they are acknowledged; workers claim them in batches under a lease, so a worker that is
/// killed loses nothing: its lease runs out and another takes its work over. A broadcast is read
/// from the devices table in key ranges as workers claim it, never written out device by device.
///
/// Run it as a swift-service-lifecycle `Service` (PostgreSQL's connections live in ``run()``), or
/// use ``withHeraldStore(configuration:logger:_:)``.
public final class HeraldStore: Service, Sendable {
    /// Where the store lives and how its queue behaves.
    public struct Configuration: Sendable {
        /// `sqlite:PATH` or `postgres://USER:PASSWORD@HOST:PORT/DATABASE`.
        public var url: StoreURL
        /// How long a worker's claim lasts before its work goes back to the queue (workers renew it
        /// while they send). Default 60 s.
        public var leaseDuration = Defaults.leaseDuration
        /// Notifications without an apns-expiration are retried for this long. Default 24 hours.
        public var maximumAge = Defaults.maximumAge
        /// The first retry of a device that could not be reached waits this long, doubling up to
        /// ``maximumRetryDelay``. Default 5 s.
        public var initialRetryDelay = Defaults.initialRetryDelay
        /// Default 10 minutes.
        public var maximumRetryDelay = Defaults.maximumRetryDelay
        /// The fraction of each retry's delay that is random (0: none, 1: anywhere from 0 to
        /// the delay), so devices that failed together are not retried in one burst. Default 0.1.
        public var retryJitter = Defaults.retryJitter
        /// PostgreSQL connections per process. Default 10.
        public var maximumConnections = 10

        /// The queue's defaults, in one place: the store's and the gateway's configurations start from them.
        public enum Defaults {
            public static let leaseDuration: Duration = .seconds(60)
            public static let maximumAge: Duration = .seconds(24 * 3600)
            public static let initialRetryDelay: Duration = .seconds(5)
            public static let maximumRetryDelay: Duration = .seconds(600)
            public static let retryJitter = 0.1
        }

        public init(url: StoreURL) {
            self.url = url
        }

        /// A configuration for the URL in `text`.
        public init(url text: String) throws(StoreError) {
            self.init(url: try StoreURL(text))
        }
    }

    public let configuration: Configuration
    let backend: QueueEngine
    private let logger: Logger

    /// A store at the configured URL. Nothing is opened yet: SQLite opens its file on first use,
    /// PostgreSQL connects once ``run()`` is running.
    public init(configuration: Configuration, logger: Logger = Logger(label: "herald.store", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.configuration = configuration
        self.logger = logger
        let database: any SQLDatabase = switch configuration.url {
        case .sqlite(let path): SQLiteDatabase.shared(path: path, logger: logger)
        case .postgres(let postgres): PostgresDatabase(configuration: postgres, maximumConnections: configuration.maximumConnections, logger: logger)
        }
        backend = QueueEngine(database: database, logger: logger)
    }

    /// Keeps the database connections until graceful shutdown (or cancellation), then closes them.
    public func run() async throws {
        _ = try? await cancelWhenGracefulShutdown {
            await self.backend.run()
            // SQLite has nothing running in the background; its service still lasts until
            // shutdown, as a service group expects of its services.
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        }
        try await backend.close()
    }

    /// Brings the schema up to this Herald's: migrations are numbered and applied once, in order
    /// (on PostgreSQL under an advisory lock, so processes starting together migrate once).
    ///
    /// - Throws: ``StoreError`` with code `newerSchema` when a newer Herald migrated the database.
    public func migrate() async throws {
        try await backend.migrate()
    }

    /// Throws unless the database answers and is migrated: what a readiness probe asks.
    public func checkReady() async throws {
        try await backend.checkReady()
    }

    /// The database's schema against this build's, its clock and whether it takes writes, read
    /// without writing or migrating anything: what `herald doctor` checks before a start.
    public func inspect() async throws -> StoreInspection {
        try await backend.inspect()
    }

    // MARK: Devices

    /// Registers a device, or registers it again: fields left `nil` keep their stored values, and
    /// the device is active again whatever it was. Returns the device, and whether it is new.
    @discardableResult
    public func register(_ registration: DeviceRegistration, app: String, now: Date = Date()) async throws -> (device: Device, created: Bool) {
        try registration.checkBadge()
        return try await backend.register(registration, app: app, now: now)
    }

    /// Registers every device of `registrations` (a million is fine: they are read and written in
    /// transactions of `batchSize`, never held at once). Returns how many were registered.
    ///
    /// Large transactions are what make this fast: tokens are random, so each new row lands on
    /// another page, and a page changed many times in one transaction is written once.
    ///
    /// When a batch cannot be written (the disk full: ``StoreError/Code/storageFull``), the
    /// batches before it stay registered and the error is thrown; `progress` has then been told
    /// how many devices they hold.
    ///
    /// - Parameter progress: Called with how many devices are registered so far, each time a
    ///   batch is written.
    @discardableResult
    public func register<Registrations: AsyncSequence>(
        contentsOf registrations: Registrations, app: String, batchSize: Int = 50_000, now: @Sendable () -> Date = { Date() },
        progress: (Int) -> Void = { _ in }
    ) async throws -> Int where Registrations.Element == DeviceRegistration {
        var batch: [DeviceRegistration] = []
        batch.reserveCapacity(min(batchSize, 50_000))
        var positions: [String: Int] = [:]
        var total = 0
        // One batch is written while the next is read: reading (parsing an import) and writing
        // take turns on different cores instead of waiting for each other. Batches are written
        // in order, one at a time; a failed write stops the import with its error.
        var writing: Task<Int, any Error>?
        func finish() async throws {
            if let previous = writing {
                total += try await previous.value
                progress(total)
            }
            writing = nil
        }
        func flush() async throws {
            // The rows are made here, while the batch before is written: the writer holds the
            // database for its statements alone.
            let rows = backend.rows(batch)
            try await finish()
            let backend = self.backend
            let time = now()
            writing = Task {
                try await backend.register(batch: rows, app: app, now: time)
                return rows.count
            }
            batch.removeAll(keepingCapacity: true)
            positions.removeAll(keepingCapacity: true)
        }
        do {
            for try await registration in registrations {
                try registration.checkBadge()
                // A token twice in one batch is one registration: the later one's fields win.
                if let position = positions[registration.token] {
                    batch[position].merge(registration)
                    continue
                }
                positions[registration.token] = batch.count
                batch.append(registration)
                if batch.count >= batchSize { try await flush() }
            }
            if !batch.isEmpty { try await flush() }
        } catch {
            // What was read before the error is written, as when batches were written in turn.
            if let written = try? await writing?.value {
                total += written
                progress(total)
            }
            throw error
        }
        try await finish()
        await backend.settle(afterRegistering: total)
        return total
    }

    public func device(app: String, token: String) async throws -> Device? {
        try await backend.device(app: app, token: token.lowercased())
    }

    /// Forgets a device. Returns whether there was one.
    @discardableResult
    public func deleteDevice(app: String, token: String) async throws -> Bool {
        try await backend.deleteDevice(app: app, token: token.lowercased())
    }

    /// A page of an app's devices, filtered; `after` is the previous page's `next`. Pages follow
    /// the order the database keeps devices in: SQLite by a hash of the token (so that a bulk
    /// import writes one index, not two), PostgreSQL by token. Either is stable: paging from the
    /// start lists each device once.
    public func devices(app: String, filter: DeviceFilter = DeviceFilter(), limit: Int = 100, after: String? = nil) async throws -> Page<Device> {
        try await backend.devices(app: app, filter: filter, limit: max(1, min(limit, 1000)), after: after)
    }

    /// The addresses of `Address`'s platform among `tokens` (device IDs) of `app`, by device ID:
    /// what a worker sends to for that platform's devices of a batch (a browser's subscription,
    /// an Android device's registration token).
    public func addresses<Address: PlatformAddress>(_ type: Address.Type, app: String, tokens: [String]) async throws -> [String: Address] {
        guard !tokens.isEmpty else { return [:] }
        return try await backend.addresses(type, app: app, tokens: tokens)
    }

    public func countDevices(app: String, status: DeviceStatus? = nil) async throws -> Int {
        try await backend.countDevices(app: app, status: status)
    }

    /// How many of an app's devices there are, by status, token kind and environment (one
    /// entry per combination that has any).
    public func deviceCounts(app: String) async throws -> [DeviceCount] {
        try await backend.deviceCounts(app: app)
    }

    /// An app's notifications not finished, and their devices not yet ended.
    public func queue(app: String) async throws -> AppQueue {
        try await backend.queue(app: app)
    }

    /// An app's deliveries that ended (accepted, rejected, failed) in each of the last `minutes`
    /// minutes (brought into 1...1440), oldest first, the last being `now`'s. A cancelled
    /// notification's devices not sent count as failed in the minute it was cancelled (a
    /// broadcast's devices in ranges not yet read are not counted: they were never read).
    public func activity(app: String, minutes: Int = 60, now: Date = Date()) async throws -> [ActivityMinute] {
        try await backend.activity(app: app, minutes: max(1, min(minutes, 1440)), now: now)
    }

    /// Applies what the legacy feedback service reported: each token is unregistered unless its
    /// device registered again after the time the service gives (Apple's rule). Returns how many
    /// devices changed.
    @discardableResult
    public func recordFeedback(app: String, _ tuples: [(token: String, timestamp: Date)], now: Date = Date()) async throws -> Int {
        try await backend.invalidate(
            app: app, reports: tuples.map { Invalidation(token: $0.token.lowercased(), reason: "Unregistered", timestamp: $0.timestamp) }, now: now
        )
    }

    // MARK: Notifications

    /// Stores a notification for sending and returns it once it is durable. The same idempotency
    /// key (per app) returns the notification stored the first time (`created` false).
    public func enqueue(_ request: NotificationRequest, now: Date = Date()) async throws -> (notification: StoredNotification, created: Bool) {
        let deadline = try self.deadline(of: request, now: now)
        var (notification, created) = try await backend.enqueue(
            request, id: NotificationID.make(now: now), deadline: deadline, maximumAge: configuration.maximumAge.seconds, now: now
        )
        notification.status = Self.status(of: notification, now: now)
        return (notification, created)
    }

    /// A pusher's device and its notification, in one transaction (the Matrix Push Gateway API,
    /// a device at a time): a device retired and not set again since (`setAt`, after its
    /// retirement) is ``PusherOutcome/rejected`` and nothing is queued; a new or changed one is
    /// registered; then `request`, if any, is queued as ``enqueue(_:now:)`` queues it.
    public func enqueue(
        _ request: NotificationRequest?, forPusher registration: DeviceRegistration, app: String, setAt: Date?, now: Date = Date()
    ) async throws -> PusherOutcome {
        try registration.checkBadge()
        let deadline = try request.map { try self.deadline(of: $0, now: now) } ?? now
        let outcome = try await backend.enqueue(
            request, forPusher: registration, app: app, setAt: setAt, id: NotificationID.make(now: now), deadline: deadline,
            maximumAge: configuration.maximumAge.seconds, now: now)
        guard case .queued(var notification, let created) = outcome else { return outcome }
        notification.status = Self.status(of: notification, now: now)
        return .queued(notification: notification, created: created)
    }

    /// A request's deadline: its APNs expiration's, or `now` plus the maximum age. Times are
    /// stored as milliseconds in a 64-bit column: a deadline past year 9999 (or a `Date` made by
    /// hand) would overflow on the way in, so it is refused here, whatever the caller.
    private func deadline(of request: NotificationRequest, now: Date) throws -> Date {
        let deadline = request.expiration?.deadline ?? now.addingTimeInterval(configuration.maximumAge.seconds)
        guard deadline.timeIntervalSince1970.isFinite, deadline.timeIntervalSince1970 <= Double(PushExpiration.maximumUnixSeconds) else {
            throw StoreError(.invalidInput, "expiration must be at most \(PushExpiration.maximumUnixSeconds) UNIX seconds (9999-12-31)")
        }
        return deadline
    }

    public func notification(id: String) async throws -> StoredNotification? {
        guard NotificationID.isValid(id.lowercased()) else { return nil }
        guard let stored = try await backend.notification(id: id.lowercased()) else { return nil }
        return try await settled(stored, now: Date())
    }

    /// A notification's status at `now`: one stored as queued is scheduled until its start.
    static func status(of notification: StoredNotification, now: Date) -> NotificationStatus {
        guard notification.status == .queued, let sendAt = notification.request.schedule?.sendAt, sendAt.milliseconds > now.milliseconds else {
            return notification.status
        }
        return .scheduled
    }

    /// A page of an app's notifications, newest first, optionally in one status; `after` is the
    /// previous page's `next`. `limit` is brought into 1...1000. Scheduled notifications are
    /// stored as queued: a page of either may hold fewer than `limit` (its `next` goes on).
    public func notifications(app: String, status: NotificationStatus? = nil, limit: Int = 100, after: String? = nil) async throws -> Page<StoredNotification> {
        let page = try await backend.notifications(app: app, status: status, limit: max(1, min(limit, 1000)), after: after?.lowercased())
        var items: [StoredNotification] = []
        items.reserveCapacity(page.items.count)
        let now = Date()
        for notification in page.items {
            let settled = try await settled(notification, now: now)
            // Both are stored as queued: told apart by their start.
            if status == .queued && settled.status == .scheduled || status == .scheduled && settled.status != .scheduled { continue }
            items.append(settled)
        }
        return Page(items: items, next: page.next)
    }

    /// Once a cancelled notification has nothing in flight, the devices it was not sent to count
    /// as failed (a broadcast's unread ranges have no rows to count, so they are counted here).
    /// While a worker still holds a lease, those devices stay pending: they may yet be accepted.
    private func settled(_ notification: StoredNotification, now: Date) async throws -> StoredNotification {
        var settled = notification
        settled.status = Self.status(of: notification, now: now)
        guard notification.status == .cancelled, notification.counts.pending > 0,
              try await backend.leasedWork(notificationID: notification.id, now: now) == 0 else { return settled }
        settled.counts.failed += notification.counts.pending
        return settled
    }

    /// A page of a notification's device outcomes in token order. Accepted devices are kept for
    /// token and user audiences; a broadcast keeps counts for them, and rows for the others.
    public func deliveries(notificationID: String, outcome: DeliveryRecord.Outcome? = nil, limit: Int = 100, after: String? = nil) async throws -> Page<DeliveryRecord> {
        try await backend.deliveries(notificationID: notificationID.lowercased(), outcome: outcome, limit: max(1, min(limit, 1000)), after: after)
    }

    /// Cancels what of a notification has not been sent; what is in flight finishes. Returns the
    /// notification, or `nil` when there is none with this ID. Devices not sent count as failed
    /// once nothing of it is in flight (until then they are pending: they may yet be accepted).
    public func cancel(id: String, now: Date = Date()) async throws -> StoredNotification? {
        guard NotificationID.isValid(id.lowercased()) else { return nil }
        guard let cancelled = try await backend.cancel(id: id.lowercased(), now: now) else { return nil }
        return try await settled(cancelled, now: now)
    }

    // MARK: Live Activities

    /// Records an update token the app reported for one of its Live Activities (created on its
    /// first token). `user` and `environment` left `nil` keep what is stored.
    ///
    /// - Throws: ``StoreError`` `conflict` when the activity has ended; `invalidInput` past
    ///   ``LiveActivity/maximumTokens`` tokens, or for a malformed ID or token.
    @discardableResult
    public func registerActivityToken(
        app: String, activityID: String, token: String, user: String? = nil, environment: TokenEnvironment? = nil, now: Date = Date()
    ) async throws -> (token: ActivityToken, created: Bool) {
        guard LiveActivity.isValidID(activityID) else {
            throw StoreError(.invalidInput, "activity ID: 1 to \(LiveActivity.maximumIDLength) of A-Z a-z 0-9 - _ . : (ActivityKit's Activity.id)")
        }
        let hex: String
        do {
            hex = try DeviceToken(token).hex
        } catch {
            throw StoreError(.invalidInput, "update token: \(error.detail ?? error.reason.rawValue)")
        }
        if let user, !DeviceRegistration.isValidUser(user) {
            throw StoreError(.invalidInput, "user must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters")
        }
        return try await backend.registerActivityToken(app: app, activityID: activityID, token: hex, user: user, environment: environment, now: now)
    }

    /// A Live Activity and its update tokens, or `nil` when no token was ever reported for it
    /// (or it ended and its dismissal date passed).
    public func activity(app: String, id: String) async throws -> LiveActivity? {
        guard LiveActivity.isValidID(id) else { return nil }
        return try await backend.activity(app: app, id: id)
    }

    /// Forgets one update token of an activity; `false` when it had none such.
    public func deleteActivityToken(app: String, activityID: String, token: String) async throws -> Bool {
        guard LiveActivity.isValidID(activityID), let hex = try? DeviceToken(token).hex else { return false }
        return try await backend.deleteActivityToken(app: app, activityID: activityID, token: hex)
    }

    /// Forgets up to `limit` ended Live Activities whose dismissal date has passed, with their
    /// update tokens, in one transaction; returns how many.
    package func forgetDismissedActivities(now: Date = Date(), limit: Int = 1000) async throws -> Int {
        try await backend.forgetDismissedActivities(now: now, limit: max(1, limit))
    }

    // MARK: Broadcast channels

    /// Keeps a channel the caller created at APNs.
    public func addChannel(_ channel: StoredChannel) async throws {
        guard StoredChannel.isValidID(channel.id) else { throw StoreError(.invalidInput, "channel ID: 1 to \(StoredChannel.maximumIDLength) base64 characters") }
        try await backend.addChannel(channel)
    }

    /// An app's channels, oldest first (at most ``StoredChannel/maximumPerEnvironment`` per environment).
    public func channels(app: String) async throws -> [StoredChannel] {
        try await backend.channels(app: app, limit: 2 * StoredChannel.maximumPerEnvironment)
    }

    public func channel(app: String, id: String) async throws -> StoredChannel? {
        guard StoredChannel.isValidID(id) else { return nil }
        return try await backend.channel(app: app, id: id)
    }

    /// Forgets a channel; `false` when there was none such.
    public func deleteChannel(app: String, id: String) async throws -> Bool {
        guard StoredChannel.isValidID(id) else { return false }
        return try await backend.deleteChannel(app: app, id: id)
    }

    // MARK: Queue

    /// Claims up to `limit` devices of one notification for `owner`: single deliveries first,
    /// else (when `includeRanges`) the next key range of a broadcast. Empty when nothing is due.
    public func claim(owner: String, limit: Int = 1000, includeRanges: Bool = true, now: Date = Date()) async throws -> [WorkBatch] {
        try await backend.claim(
            owner: owner, limit: max(1, limit), includeRanges: includeRanges, leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds),
            now: now
        )
    }

    /// Extends the lease on a batch still being sent.
    ///
    /// - Throws: ``StoreError`` with code `leaseLost` when the batch (or some of its devices) is
    ///   no longer this worker's: its lease ran out and another worker took it over, or it was
    ///   completed. What is still held is renewed.
    public func renew(_ batch: WorkBatch, now: Date = Date()) async throws {
        try await backend.renew(batch, leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds))
    }

    /// Records how each device of a batch ended: counts, rejections kept for listing, retries
    /// scheduled with back-off until the notification's deadline, devices pruned by APNs's rules.
    ///
    /// - Throws: ``StoreError`` with code `leaseLost` when the batch's lease ran out and another
    ///   worker took it over (its outcomes then count, not these).
    public func complete(_ batch: WorkBatch, outcomes: [DeliveryOutcome], now: Date = Date()) async throws {
        try await backend.complete(batch, outcomes: outcomes, settings: RetrySettings(configuration, jitter: configuration.retryJitter), now: now)
    }

    /// Gives a batch back unsent (the worker is stopping): another worker may take it at once.
    public func release(_ batch: WorkBatch) async throws {
        try await backend.release(batch)
    }

    /// Returns when there may be new work (LISTEN/NOTIFY on PostgreSQL, a signal within the
    /// process on SQLite), when work queued for later falls due (a scheduled or paced
    /// delivery, a broadcast's range), or after `timeout`.
    public func waitForWork(timeout: Duration, now: Date = Date()) async {
        await backend.waitForWork(timeout: timeout, now: now)
    }

    /// How much work is waiting: deliveries, broadcast ranges, notifications not finished.
    public func statistics(now: Date = Date()) async throws -> QueueStatistics {
        try await backend.statistics(now: now)
    }

    /// Deletes at most `limit` rows of outcomes and notifications finished before `cutoff`, in
    /// one short transaction; returns how many went (fewer than `limit`: nothing more is due).
    /// The gateway's housekeeping: a library user calls ``purge(finishedBefore:batchSize:)``.
    package func purgeOnce(finishedBefore cutoff: Date, limit: Int = 1000) async throws -> Int {
        try await backend.purge(finishedBefore: cutoff, limit: max(1, limit))
    }

    /// Deletes at most `limit` devices retired (unregistered or invalid) before `cutoff`, with
    /// their tags, in one short transaction; returns how many went.
    /// Retires up to `limit` of `app`'s active devices of `platform` not registered again since
    /// `cutoff` (a stale FCM token stops working after 270 days), as `Stale`, each with a
    /// `device.retired` event; returns how many. A device that registers again is active again.
    public func retireStaleDevices(app: String, platform: DevicePlatform, notUpdatedSince cutoff: Date, limit: Int = 1000, now: Date = Date()) async throws -> Int {
        try await backend.retireStale(app: app, platform: platform, notUpdatedSince: cutoff, limit: limit, now: now)
    }

    /// Deletes at most `limit` rows of what frequency caps counted and digests held that no
    /// window reaches since `cutoff`; returns how many went.
    package func purgeScreening(before cutoff: Date, limit: Int = 1000) async throws -> Int {
        try await backend.purgeScreening(before: cutoff, limit: max(1, limit))
    }

    package func purgeRetiredDevices(before cutoff: Date, limit: Int = 1000) async throws -> Int {
        try await backend.purgeRetiredDevices(before: cutoff, limit: max(1, limit))
    }

    /// Deliveries not yet ended (queued, claimed or waiting for a retry), per app: the gateway's
    /// per-app backlog bound.
    package func pendingDeliveriesByApp() async throws -> [String: Int] {
        try await backend.pendingDeliveriesByApp()
    }

    /// Deletes outcomes and notifications finished before `cutoff`, at most `limit` rows at a
    /// time until none are left; returns how many rows went.
    @discardableResult
    public func purge(finishedBefore cutoff: Date, batchSize: Int = 10_000) async throws -> Int {
        var total = 0
        // Bounded: 10⁶ batches of at least one row each.
        for _ in 0..<1_000_000 {
            let purged = try await backend.purge(finishedBefore: cutoff, limit: max(1, batchSize))
            total += purged
            if purged < max(1, batchSize) { break }
        }
        return total
    }
}

/// Runs `body` with a store whose connections live for the call: migrated first, closed after.
public func withHeraldStore<Result: Sendable>(
    configuration: HeraldStore.Configuration, logger: Logger = Logger(label: "herald.store", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (HeraldStore) async throws -> Result
) async throws -> Result {
    let store = HeraldStore(configuration: configuration, logger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await store.backend.run() }
        defer { group.cancelAll() }
        do {
            try await store.migrate()
            let result = try await body(store)
            try await store.backend.close()
            return result
        } catch {
            try? await store.backend.close()
            throw error
        }
    }
}
