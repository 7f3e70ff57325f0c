import HeraldMockCore
import Synchronization

/// What the mock FCM holds, behind one lock: the access tokens it handed out, the unregistered
/// tokens, the scripted faults, the accepted messages and the counts.
final class MockFCMState: Sendable {
    /// A fault with the requests it still applies to (`nil`: every one).
    struct Scripted: Sendable {
        var fault: MockFCMFault
        var remaining: Int?
        /// Requests still to let pass before it applies.
        var passes = 0
    }

    /// Access tokens held at once; past it, expired ones are forgotten, then all of them (their
    /// clients get a 401 and fetch a fresh one). Against a client fetching a token per message.
    static let maximumAccessTokens = 100_000

    private struct Storage {
        var accessTokens: [String: ContinuousClock.Instant] = [:]
        /// The access token handed out last, also in `accessTokens`.
        var latestAccessToken: (token: String, expiry: ContinuousClock.Instant)?
        var unregistered: Set<String> = []
        var tokenFaults: [String: [Scripted]] = [:]
        var globalFaults: [Scripted] = []
        var records: MockRecordRing<MockFCMMessage>
        var receivedCount = 0
        var requestCount = 0
        var tokenRequestCount = 0
        var accessTokensIssued = 0
        var rejectionsByReason: [String: Int] = [:]
    }

    private let storage: Mutex<Storage>
    private let clock = ContinuousClock()

    init(maximumRecords: Int) {
        storage = Mutex(Storage(records: MockRecordRing(capacity: maximumRecords)))
    }

    // MARK: Access tokens

    func countTokenRequest() {
        storage.withLock { $0.tokenRequestCount += 1 }
    }

    /// Keeps `token` valid for `lifetime`.
    func issue(_ token: String, lifetime: Duration) {
        let now = clock.now
        storage.withLock { storage in
            if storage.accessTokens.count >= Self.maximumAccessTokens {
                storage.accessTokens = storage.accessTokens.filter { $0.value > now }
                if storage.accessTokens.count >= Self.maximumAccessTokens { storage.accessTokens = [:] }
            }
            storage.accessTokens[token] = now + lifetime
            storage.latestAccessToken = (token, now + lifetime)
            storage.accessTokensIssued += 1
        }
    }

    /// Whether `token` was handed out and has not expired.
    func isValid(accessToken token: String) -> Bool {
        let now = clock.now
        return storage.withLock { storage in
            // Nearly every request carries the token handed out last: compared, not hashed (a
            // few hundred bytes of SipHash per request were 1.4 % of a benchmark's CPU).
            if let latest = storage.latestAccessToken, latest.token == token { return now < latest.expiry }
            return storage.accessTokens[token].map { now < $0 } ?? false
        }
    }

    /// Every access token handed out expires now.
    func expireAccessTokens() {
        storage.withLock { storage in
            storage.accessTokens = [:]
            storage.latestAccessToken = nil
        }
    }

    // MARK: Registration tokens and faults

    func unregister(_ token: String) {
        storage.withLock { _ = $0.unregistered.insert(token) }
    }

    func isUnregistered(_ token: String) -> Bool {
        storage.withLock { $0.unregistered.contains(token) }
    }

    /// Scripts `fault` for registration token `token` (`nil`: every message). A fault for zero
    /// requests is ignored.
    func script(_ fault: MockFCMFault, for token: String?) {
        if let times = fault.times, times <= 0 { return }
        let scripted = Scripted(fault: fault, remaining: fault.times, passes: fault.passes)
        storage.withLock { storage in
            if let token { storage.tokenFaults[token, default: []].append(scripted) } else { storage.globalFaults.append(scripted) }
        }
    }

    func clearScripts() {
        storage.withLock { storage in
            storage.globalFaults = []
            storage.tokenFaults = [:]
        }
    }

    /// The fault for the next message to `token`: its own first, then the global ones; spends
    /// one of its requests.
    func takeFault(for token: String) -> MockFCMFault? {
        storage.withLock { storage in
            if let fault = storage.tokenFaults[token]?.takeFirst() { return fault }
            return storage.globalFaults.takeFirst()
        }
    }

    // MARK: Counts and records

    func countRequest() {
        storage.withLock { $0.requestCount += 1 }
    }

    func countRejection(_ reason: String) {
        storage.withLock { storage in
            // The reasons are the mock's own handful.
            if storage.rejectionsByReason[reason] != nil || storage.rejectionsByReason.count < 64 {
                storage.rejectionsByReason[reason, default: 0] += 1
            }
        }
    }

    /// Counts an accepted message, records it (`make` makes it from its number) when records
    /// are kept, and returns its number (1, 2, …).
    func record(_ make: (Int) -> MockFCMMessage) -> Int {
        storage.withLock { storage in
            storage.receivedCount += 1
            let number = storage.receivedCount
            storage.records.append { make(number) }
            return number
        }
    }

    var received: [MockFCMMessage] { storage.withLock { $0.records.elements } }
    var receivedCount: Int { storage.withLock { $0.receivedCount } }
    var droppedRecordCount: Int { storage.withLock { $0.records.droppedCount } }
    var requestCount: Int { storage.withLock { $0.requestCount } }
    var tokenRequestCount: Int { storage.withLock { $0.tokenRequestCount } }
    var accessTokensIssued: Int { storage.withLock { $0.accessTokensIssued } }
    var rejectionsByReason: [String: Int] { storage.withLock { $0.rejectionsByReason } }
}

extension [MockFCMState.Scripted] {
    /// The first fault, spending one of its requests (and removing it once spent); `nil` while
    /// it lets requests pass.
    fileprivate mutating func takeFirst() -> MockFCMFault? {
        guard let first else { return nil }
        if first.passes > 0 {
            self[0].passes -= 1
            return nil
        }
        if let remaining = first.remaining {
            if remaining <= 1 { removeFirst() } else { self[0].remaining = remaining - 1 }
        }
        return first.fault
    }
}
