import HeraldStore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Takes receipts from `POST /v1/receipts`: checks each token (its form, age, app and MAC, then
/// the one device it names) and stores those that pass, many requests' receipts in one read and
/// one transaction. While a group is being stored the next gathers (two are stored at once):
/// under load each commit carries hundreds of receipts, at rest one request's. What waits is
/// bounded (``maximumWaiting``): past it a request is refused at once, and the sender retries.
actor ReceiptIngester {
    /// A receipt as a device sent it.
    struct Incoming: Sendable {
        var receipt: String
        var event: ReceiptEvent
        var action: String
    }

    /// How one receipt ended.
    enum Verdict: Sendable, Equatable {
        /// Stored, or stored before (counted once).
        case taken
        case refused(ReceiptToken.Refusal)
    }

    /// The most receipts waiting to be stored, across every request, by default: a flood past it
    /// is refused with 429 and `Retry-After` rather than queued without end.
    static let defaultMaximumWaiting = 20_000
    /// The most receipts one transaction stores.
    static let maximumPerGroup = 2_000
    /// How far ahead of this gateway's clock a token's time may be (another process's clock).
    static let clockSkew: TimeInterval = 300

    private let store: HeraldStore
    private let live: LiveConfiguration
    private let keyring: ReceiptKeyring
    private let metrics: GatewayMetrics
    private let logger: Logger
    /// The most receipts waiting to be stored (``defaultMaximumWaiting``).
    let maximumWaiting: Int

    private var waiting: [(items: [Incoming], continuation: CheckedContinuation<[Verdict], any Error>)] = []
    private var waitingCount = 0
    /// Groups being checked and stored now, at most ``concurrentGroups``.
    private var storing = 0
    /// Groups checked and stored at once: while one waits on the database (on PostgreSQL, a
    /// round trip per statement), the next is checked and sent.
    static let concurrentGroups = 2

    init(
        store: HeraldStore, live: LiveConfiguration, keyring: ReceiptKeyring, metrics: GatewayMetrics, logger: Logger,
        maximumWaiting: Int = ReceiptIngester.defaultMaximumWaiting
    ) {
        self.maximumWaiting = maximumWaiting
        self.store = store
        self.live = live
        self.keyring = keyring
        self.metrics = metrics
        self.logger = logger
    }

    /// Whether `count` more receipts would pass the bound of those waiting.
    func hasRoom(for count: Int) -> Bool { waitingCount + count <= maximumWaiting }

    /// Checks and stores `items`, with others sent meanwhile; each one's verdict, in order.
    /// Throws when the store cannot be written (nothing of the group is stored) or the bound of
    /// receipts waiting is reached (`ReceiptBacklogFull`).
    func take(_ items: [Incoming]) async throws -> [Verdict] {
        guard waitingCount + items.count <= maximumWaiting else { throw ReceiptBacklogFull() }
        waitingCount += items.count
        return try await withCheckedThrowingContinuation { continuation in
            waiting.append((items, continuation))
            if storing < Self.concurrentGroups {
                storing += 1
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !waiting.isEmpty {
            var group: [(items: [Incoming], continuation: CheckedContinuation<[Verdict], any Error>)] = []
            var count = 0
            while let first = waiting.first, group.isEmpty || count + first.items.count <= Self.maximumPerGroup {
                group.append(waiting.removeFirst())
                count += first.items.count
            }
            waitingCount -= count
            do {
                let verdicts = try await check(group.flatMap(\.items))
                var offset = 0
                for (items, continuation) in group {
                    continuation.resume(returning: Array(verdicts[offset..<(offset + items.count)]))
                    offset += items.count
                }
            } catch {
                for (_, continuation) in group { continuation.resume(throwing: error) }
            }
        }
        storing -= 1
    }

    /// Each notification's app, as read (`""`: none such), kept between groups: most receipts
    /// are for a few recent notifications. Bounded: emptied when it reaches ``maximumCachedApps``.
    private var appsOfNotifications: [String: String] = [:]
    static let maximumCachedApps = 50_000

    /// The verdict of each of `items`, storing those taken. A receipt's MAC is checked before its
    /// device is looked for: a forged one costs at most its notification's app, read once.
    private func check(_ items: [Incoming]) async throws -> [Verdict] {
        let now = Date()
        let configuration = live.configuration
        var verdicts = [Verdict?](repeating: nil, count: items.count)
        var parsed: [(index: Int, token: ReceiptToken)] = []
        for (index, item) in items.enumerated() {
            do throws(ReceiptTokenError) {
                let token = try ReceiptToken(parsing: item.receipt)
                if token.issuedAt.timeIntervalSince(now) > Self.clockSkew {
                    verdicts[index] = .refused(.forged)
                } else {
                    parsed.append((index, token))
                }
            } catch {
                verdicts[index] = .refused(error.refusal)
            }
        }
        let unknown = Set(parsed.map(\.token.notification)).filter { appsOfNotifications[$0] == nil }
        if !unknown.isEmpty {
            let apps = try await store.notificationApps(Array(unknown))
            if appsOfNotifications.count + unknown.count > Self.maximumCachedApps { appsOfNotifications = [:] }
            for id in unknown { appsOfNotifications[id] = apps[id] ?? "" }
        }
        var verified: [(index: Int, token: ReceiptToken, app: String)] = []
        for (index, token) in parsed {
            // Forged and gone are told apart from nothing: the same refusal either way.
            guard let appID = appsOfNotifications[token.notification], let app = configuration.app(appID) else {
                verdicts[index] = .refused(.forged)
                continue
            }
            guard app.receipts.enabled else {
                verdicts[index] = .refused(.disabled)
                continue
            }
            if now.timeIntervalSince(token.issuedAt) > app.receipts.lifetime(retention: configuration.queue.retention) {
                verdicts[index] = .refused(.expired)
                continue
            }
            guard let key = try? await keyring.keys(app: appID).bySlot[token.slot], token.verify(app: appID, key: key) else {
                verdicts[index] = .refused(.forged)
                continue
            }
            verified.append((index, token, appID))
        }
        var records: [ReceiptRecord] = []
        var recordIndices: [Int] = []
        if !verified.isEmpty {
            let keys = Set(verified.map { DeviceHashKey(app: $0.app, kind: $0.token.kind, hash: $0.token.deviceHash) })
            let devices = try await store.receiptDevices(Array(keys))
            for (index, token, app) in verified {
                // The one device the receipt names; none (gone), or two sharing its 48 bits: refused.
                let named = devices[DeviceHashKey(app: app, kind: token.kind, hash: token.deviceHash)]?.filter { token.names($0) } ?? []
                guard named.count == 1, let device = named.first else {
                    verdicts[index] = .refused(.forged)
                    continue
                }
                let item = items[index]
                records.append(
                    ReceiptRecord(
                        app: app, notification: token.notification, device: device, platform: token.platform, event: item.event,
                        action: item.event == .clicked ? item.action : "", issuedAt: token.issuedAt))
                recordIndices.append(index)
            }
        }
        if !records.isEmpty {
            // In key order: two groups stored at once that share a receipt (a replay) wait for
            // each other in one order, never in a cycle.
            records.sort { ($0.notification, $0.device, $0.event.rawValue, $0.action) < ($1.notification, $1.device, $1.event.rawValue, $1.action) }
            let stored = try await store.recordReceipts(records, now: now)
            metrics.recordReceipts(stored)
            for index in recordIndices { verdicts[index] = .taken }
        }
        let final = verdicts.map { $0 ?? .refused(.forged) }
        var refused: [ReceiptToken.Refusal: Int] = [:]
        for case .refused(let refusal) in final { refused[refusal, default: 0] += 1 }
        if !refused.isEmpty { metrics.recordReceiptsRefused(refused) }
        return final
    }
}

/// Too many receipts are waiting to be stored: the request is refused, to be sent again later.
struct ReceiptBacklogFull: Error {}
