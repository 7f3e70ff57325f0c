import Crypto
import HeraldMockCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the mock push service holds, behind one lock: the subscriptions it handed out (with the
/// browser's private keys), the scripted faults, the accepted messages and the counts.
final class MockWebPushState: Sendable {
    /// A subscription as the browser holds it.
    struct Subscription: Sendable {
        let id: String
        let endpoint: URL
        /// The browser's key: its public half is `p256dh`.
        let privateKey: P256.KeyAgreement.PrivateKey
        let authSecret: [UInt8]
        /// Pushes must be signed by this key (the 65-byte `k`), when given (RFC 8292 §4).
        let applicationServerKey: [UInt8]?
        /// Unsubscribed: answered 410 from then on.
        var isGone = false
        var faults: [Scripted] = []
    }

    /// A fault with the requests it still applies to (`nil`: every one).
    struct Scripted: Sendable {
        var fault: MockWebPushFault
        var remaining: Int?
    }

    private struct Storage {
        var subscriptions: [String: Subscription] = [:]
        var globalFaults: [Scripted] = []
        /// The subscriptions faults were scripted for.
        var scriptedIDs: Set<String> = []
        var records: MockRecordRing<MockWebPushMessage>
        var receivedCount = 0
        var requestCount = 0
        var rejectionsByReason: [String: Int] = [:]
    }

    private let storage: Mutex<Storage>

    init(maximumRecords: Int) {
        storage = Mutex(Storage(records: MockRecordRing(capacity: maximumRecords)))
    }

    // MARK: Subscriptions

    /// Adds `subscription`, unless `limit` is given and reached. Returns whether it was added.
    func add(_ subscription: Subscription, limit: Int? = nil) -> Bool {
        storage.withLock { storage in
            if let limit, storage.subscriptions.count >= limit { return false }
            storage.subscriptions[subscription.id] = subscription
            return true
        }
    }

    func subscription(_ id: String) -> Subscription? {
        storage.withLock { $0.subscriptions[id] }
    }

    func unsubscribe(_ id: String) {
        storage.withLock { $0.subscriptions[id]?.isGone = true }
    }

    var subscriptionCount: Int { storage.withLock { $0.subscriptions.count } }

    // MARK: Faults

    /// Scripts `fault` for subscription `id` (`nil`: every request). A fault for zero requests, or
    /// for a subscription the mock does not hold, is ignored.
    func script(_ fault: MockWebPushFault, for id: String?) {
        if let times = fault.times, times <= 0 { return }
        let scripted = Scripted(fault: fault, remaining: fault.times)
        storage.withLock { storage in
            if let id {
                guard storage.subscriptions[id] != nil else { return }
                storage.subscriptions[id]?.faults.append(scripted)
                storage.scriptedIDs.insert(id)
            } else {
                storage.globalFaults.append(scripted)
            }
        }
    }

    func clearScripts() {
        storage.withLock { storage in
            storage.globalFaults = []
            for id in storage.scriptedIDs { storage.subscriptions[id]?.faults = [] }
            storage.scriptedIDs = []
        }
    }

    /// The fault for the next request to subscription `id`: its own first, then the global ones;
    /// spends one of its requests.
    func takeFault(for id: String) -> MockWebPushFault? {
        storage.withLock { storage in
            storage.subscriptions[id]?.faults.takeFirst() ?? storage.globalFaults.takeFirst()
        }
    }

    // MARK: Counts and records

    func countRequest() {
        storage.withLock { $0.requestCount += 1 }
    }

    func countRejection(_ reason: String) {
        storage.withLock { storage in
            // Scripted reasons are the test's own; the built-in ones are a handful.
            if storage.rejectionsByReason[reason] != nil || storage.rejectionsByReason.count < 256 {
                storage.rejectionsByReason[reason, default: 0] += 1
            }
        }
    }

    func record(_ message: MockWebPushMessage) {
        storage.withLock { storage in
            storage.receivedCount += 1
            storage.records.append(message)
        }
    }

    var received: [MockWebPushMessage] { storage.withLock { $0.records.elements } }
    var receivedCount: Int { storage.withLock { $0.receivedCount } }
    var droppedRecordCount: Int { storage.withLock { $0.records.droppedCount } }
    var requestCount: Int { storage.withLock { $0.requestCount } }
    var rejectionsByReason: [String: Int] { storage.withLock { $0.rejectionsByReason } }

    func removeRecords() {
        storage.withLock { $0.records.removeAll() }
    }
}

extension [MockWebPushState.Scripted] {
    /// The first fault, spending one of its requests (and removing it once spent).
    fileprivate mutating func takeFirst() -> MockWebPushFault? {
        guard let first else { return nil }
        if let remaining = first.remaining {
            if remaining <= 1 { removeFirst() } else { self[0].remaining = remaining - 1 }
        }
        return first.fault
    }
}
