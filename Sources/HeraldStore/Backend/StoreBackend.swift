#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What each database does for ``HeraldStore``, with the same behaviour on both; the store's
/// tests run every rule against each. Times are passed in, so the rules are testable on a clock.
protocol StoreBackend: Sendable {
    /// Keeps the connections going until cancelled (PostgreSQL's pool); returns at once if there is nothing to run.
    func run() async
    /// Applies the migrations this Herald knows and the database does not have yet; refuses a
    /// database migrated by a newer Herald.
    func migrate() async throws
    /// Whether the database answers and is migrated.
    func checkReady() async throws
    func close() async throws

    func register(_ registration: DeviceRegistration, app: String, now: Date) async throws -> (device: Device, created: Bool)
    /// Registers a batch at once (one statement or COPY): the facade cuts a stream into batches.
    func register(batch: [DeviceRegistration], app: String, now: Date) async throws
    func device(app: String, token: String) async throws -> Device?
    func deleteDevice(app: String, token: String) async throws -> Bool
    func devices(app: String, filter: DeviceFilter, limit: Int, after: String?) async throws -> Page<Device>
    func countDevices(app: String, status: DeviceStatus?) async throws -> Int
    /// Marks devices unregistered or invalid by what APNs reported (Apple's timestamp rule for
    /// `Unregistered`). Returns how many changed.
    func invalidate(app: String, reports: [Invalidation], now: Date) async throws -> Int

    func enqueue(_ request: NotificationRequest, id: String, deadline: Date, now: Date) async throws -> (notification: StoredNotification, created: Bool)
    func notification(id: String) async throws -> StoredNotification?
    func deliveries(notificationID: String, outcome: DeliveryRecord.Outcome?, limit: Int, after: String?) async throws -> Page<DeliveryRecord>
    func cancel(id: String, now: Date) async throws -> StoredNotification?
    /// How many deliveries and ranges of a notification a worker holds a live lease on.
    func leasedWork(notificationID: String, now: Date) async throws -> Int

    func claim(owner: String, limit: Int, includeRanges: Bool, leaseUntil: Date, now: Date) async throws -> [WorkBatch]
    func renew(_ batch: WorkBatch, leaseUntil: Date) async throws
    func complete(_ batch: WorkBatch, outcomes: [DeliveryOutcome], retryAt: @escaping @Sendable (Int) -> Date, now: Date) async throws
    func release(_ batch: WorkBatch) async throws
    func statistics(now: Date) async throws -> QueueStatistics
    /// Deletes up to `limit` rows of outcomes and notifications finished before `cutoff`; returns how many.
    func purge(finishedBefore cutoff: Date, limit: Int) async throws -> Int

    /// Returns when there may be work (another process or task queued some), or after `timeout`.
    func waitForWork(timeout: Duration) async

    /// Deletes up to `limit` devices retired (unregistered or invalid) before `cutoff`, with their tags; returns how many.
    func purgeRetiredDevices(before cutoff: Date, limit: Int) async throws -> Int
    /// Deliveries not yet ended, per app (from the active notifications' counts).
    func pendingDeliveriesByApp() async throws -> [String: Int]
}

extension StoreError {
    /// A renewal that found `renewed` of the batch's `held` rows (or its range) still leased to
    /// its owner: the others' lease ran out and another worker took them (or they were completed).
    static func leaseLost(_ batch: WorkBatch, renewed: Int, of held: Int) -> StoreError {
        switch batch.source {
        case .deliveries:
            StoreError(.leaseLost, "the lease on \(held - renewed) of \(held) devices of notification \(batch.notification.id) ran out and another worker took them")
        case .segment:
            StoreError(.leaseLost, "the lease on a range of notification \(batch.notification.id) ran out and another worker took it")
        }
    }
}

/// What APNs said about a device that makes it unreachable.
struct Invalidation: Sendable, Hashable {
    var token: String
    var reason: String
    /// When APNs saw the token go (410 and feedback); `nil` for reasons that invalidate at once.
    var timestamp: Date?

    /// The reasons that end a device, and how (apns-spec §1.7): `Unregistered` and
    /// `ExpiredToken` only if the device has not registered again since APNs's timestamp;
    /// `BadDeviceToken` and `DeviceTokenNotForTopic` at once.
    static func status(for reason: String) -> DeviceStatus? {
        switch reason {
        case "Unregistered", "ExpiredToken": .unregistered
        case "BadDeviceToken", "DeviceTokenNotForTopic": .invalid
        default: nil
        }
    }
}

/// How much work is waiting.
public struct QueueStatistics: Sendable, Hashable {
    /// Deliveries waiting to be sent or retried, or claimed now.
    public var pendingDeliveries: Int
    /// Key ranges of broadcasts not yet read to their end.
    public var pendingRanges: Int
    /// Notifications queued or sending.
    public var activeNotifications: Int
}

/// Milliseconds since the epoch, as the databases store times.
extension Date {
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
