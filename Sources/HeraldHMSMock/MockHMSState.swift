import HeraldMockCore
import Synchronization

/// The mock Push Kit's tables: access tokens handed out, tokens it treats as invalid, scripted
/// faults, accepted messages and counters. Every table has a bound.
final class MockHMSState: Sendable {
    /// Access tokens remembered at most; past it expired ones are dropped, then the oldest.
    static let maximumAccessTokens = 100_000
    /// Invalid tokens remembered at most.
    static let maximumInvalidTokens = 100_000
    /// Scripted faults queued at most.
    static let maximumFaults = 10_000

    private struct State: Sendable {
        var accessTokens: [String: ContinuousClock.Instant] = [:]
        var invalidTokens: Set<String> = []
        var faults: [MockHMSFault] = []
        var remaining = 0
        var records: MockRecordRing<MockHMSMessage>
        var receivedCount = 0
        var requestCount = 0
        var tokenRequestCount = 0
        var accessTokensIssued = 0
        var rejections: [String: Int] = [:]
    }

    private let state: Mutex<State>
    private let clock = ContinuousClock()

    init(maximumRecords: Int) {
        state = Mutex(State(records: MockRecordRing(capacity: max(0, maximumRecords))))
    }

    func issue(_ token: String, lifetime: Duration) {
        let expiry = clock.now + lifetime
        state.withLock { state in
            if state.accessTokens.count >= Self.maximumAccessTokens {
                let now = clock.now
                state.accessTokens = state.accessTokens.filter { $0.value > now }
                if state.accessTokens.count >= Self.maximumAccessTokens { state.accessTokens.removeAll() }
            }
            state.accessTokens[token] = expiry
            state.accessTokensIssued += 1
        }
    }

    /// `nil` when unknown, `false` when expired, `true` when usable.
    func accessTokenStatus(_ token: String) -> Bool? {
        let now = clock.now
        return state.withLock { $0.accessTokens[token].map { now < $0 } }
    }

    func expireAccessTokens() {
        let now = clock.now
        state.withLock { state in
            for key in state.accessTokens.keys { state.accessTokens[key] = now }
        }
    }

    func invalidate(_ token: String) {
        state.withLock { state in
            if state.invalidTokens.count < Self.maximumInvalidTokens { state.invalidTokens.insert(token) }
        }
    }

    func invalidTokens(among tokens: [String]) -> [String] {
        state.withLock { state in tokens.filter { state.invalidTokens.contains($0) } }
    }

    func script(_ fault: MockHMSFault) {
        guard fault.times > 0 else { return }
        state.withLock { state in
            guard state.faults.count < Self.maximumFaults else { return }
            if state.faults.isEmpty { state.remaining = fault.times }
            state.faults.append(fault)
        }
    }

    func clearScripts() {
        state.withLock { $0.faults.removeAll() }
    }

    /// The fault the next send meets, if any; counts it down.
    func takeFault() -> MockHMSFault? {
        state.withLock { state in
            guard let fault = state.faults.first else { return nil }
            state.remaining -= 1
            if state.remaining <= 0 {
                state.faults.removeFirst()
                state.remaining = state.faults.first?.times ?? 0
            }
            return fault
        }
    }

    func record(_ make: (Int) -> MockHMSMessage) {
        state.withLock { state in
            state.receivedCount += 1
            let number = state.receivedCount
            state.records.append(making: { make(number) })
        }
    }

    func countRequest() { state.withLock { $0.requestCount += 1 } }
    func countTokenRequest() { state.withLock { $0.tokenRequestCount += 1 } }
    func countRejection(_ reason: String) { state.withLock { $0.rejections[reason, default: 0] += 1 } }

    var received: [MockHMSMessage] { state.withLock { $0.records.elements } }
    var receivedCount: Int { state.withLock { $0.receivedCount } }
    var requestCount: Int { state.withLock { $0.requestCount } }
    var tokenRequestCount: Int { state.withLock { $0.tokenRequestCount } }
    var accessTokensIssued: Int { state.withLock { $0.accessTokensIssued } }
    var rejectionsByReason: [String: Int] { state.withLock { $0.rejections } }
}
