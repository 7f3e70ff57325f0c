import HeraldStore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Each app's receipt keys, read from the store and kept for ``refreshInterval``: a rotation in
/// any process signs with the new key everywhere within that long (a rotation's overlap must be
/// longer, and is at least ``minimumOverlap``).
final class ReceiptKeyring: Sendable {
    let store: HeraldStore
    let refreshInterval: Duration

    /// The shortest overlap a rotation may ask for: longer than any process keeps the old key.
    static let minimumOverlapSeconds = 300

    struct Keys: Sendable {
        /// The key that signs: the newest.
        var signing: ReceiptKey
        /// Every key that verifies, by slot.
        var bySlot: [Int: ReceiptKey]
    }

    private struct Entry {
        var keys: Keys
        var fetched: ContinuousClock.Instant
    }

    private let cache = Mutex<[String: Entry]>([:])

    init(store: HeraldStore, refreshInterval: Duration = .seconds(60)) {
        self.store = store
        self.refreshInterval = refreshInterval
    }

    /// `app`'s keys: from the cache while fresh, else from the store (which makes the first).
    func keys(app: String) async throws -> Keys {
        let now = ContinuousClock.now
        if let entry = cache.withLock({ $0[app] }), entry.fetched.duration(to: now) < refreshInterval { return entry.keys }
        let stored = try await store.receiptKeys(app: app)
        guard let newest = stored.first else { throw StoreError(.invalidInput, "no receipt key for app \(app)") }
        var bySlot: [Int: ReceiptKey] = [:]
        for key in stored.reversed() { bySlot[key.slot] = ReceiptKey(slot: key.slot, secret: key.secret) }
        let keys = Keys(signing: bySlot[newest.slot] ?? ReceiptKey(slot: newest.slot, secret: newest.secret), bySlot: bySlot)
        cache.withLock { $0[app] = Entry(keys: keys, fetched: now) }
        return keys
    }

    /// Forgets `app`'s keys: the next use reads them again (after a rotation here).
    func forget(app: String) {
        cache.withLock { $0[app] = nil }
    }
}
