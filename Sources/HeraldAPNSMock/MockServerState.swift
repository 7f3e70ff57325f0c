import HeraldCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the mock counts and records, and its script: shared by all its connections.
final class MockServerState: Sendable {
    private struct Records {
        var accepted: [AcceptedNotification] = []
        var acceptedStart = 0
        var rejected: [RejectedNotification] = []
        var rejectedByReason: [String: Int] = [:]
        var script: MockScript
        var random: SplitMix64
        var providerTokens: Set<String> = []
        /// The remembered provider tokens, oldest first, to forget them in that order.
        var providerTokenOrder: [String] = []
        var providerTokenOrderStart = 0
        var distinctProviderTokens = 0
        var peakStreamsByLimit: [Int: Int] = [:]
    }

    let recordLimit: Int
    let limits: MockAPNSServer.Limits
    private let records: Mutex<Records>
    private let acceptedTotal = Atomic<Int>(0)
    private let requestTotal = Atomic<Int>(0)
    private let connectionTotal = Atomic<Int>(0)
    private let refusedTotal = Atomic<Int>(0)
    private let openConnections = Atomic<Int>(0)
    private let requestBytes = Atomic<Int>(0)
    private let peakQueuedResponses = Atomic<Int>(0)

    init(script: MockScript, recordLimit: Int, limits: MockAPNSServer.Limits = .init()) {
        self.recordLimit = recordLimit
        self.limits = limits
        self.records = Mutex(Records(script: script, random: SplitMix64(seed: script.randomFaults?.seed ?? 0)))
    }

    var acceptedCount: Int { acceptedTotal.load(ordering: .relaxed) }
    var requestCount: Int { requestTotal.load(ordering: .relaxed) }
    var connectionCount: Int { connectionTotal.load(ordering: .relaxed) }

    func nextConnectionNumber() -> Int {
        connectionTotal.wrappingAdd(1, ordering: .relaxed).newValue
    }

    var refusedStreamCount: Int { refusedTotal.load(ordering: .relaxed) }

    func countRefusedStream() {
        refusedTotal.wrappingAdd(1, ordering: .relaxed)
    }

    /// Takes a connection if fewer than ``MockAPNSServer/Limits/maximumConnections`` are open.
    func admitConnection() -> Bool {
        let open = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        if open > limits.maximumConnections {
            openConnections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func connectionClosed() {
        openConnections.wrappingSubtract(1, ordering: .relaxed)
    }

    var openConnectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Takes `count` bytes of the server-wide request budget; false when they do not fit.
    func reserveRequestBytes(_ count: Int) -> Bool {
        let total = requestBytes.wrappingAdd(count, ordering: .relaxed).newValue
        if total > limits.maximumBufferedRequestBytes {
            requestBytes.wrappingSubtract(count, ordering: .relaxed)
            return false
        }
        return true
    }

    func releaseRequestBytes(_ count: Int) {
        requestBytes.wrappingSubtract(count, ordering: .relaxed)
    }

    /// A connection had `count` bytes of answers written and not yet taken by its client.
    func sawQueuedResponseBytes(_ count: Int) {
        peakQueuedResponses.max(count, ordering: .relaxed)
    }

    var peakQueuedResponseBytes: Int { peakQueuedResponses.load(ordering: .relaxed) }

    /// Bytes of requests held now, over all connections.
    var bufferedRequestBytes: Int { requestBytes.load(ordering: .relaxed) }

    /// A connection started using a provider token (first use, or a change). At most
    /// ``MockAPNSServer/Limits/maximumRememberedProviderTokens`` are remembered, oldest forgotten first.
    func sawProviderToken(_ token: String) {
        let limit = limits.maximumRememberedProviderTokens
        records.withLock { records in
            guard limit > 0, records.providerTokens.insert(token).inserted else { return }
            records.distinctProviderTokens += 1
            if records.providerTokenOrder.count < limit {
                records.providerTokenOrder.append(token)
            } else {
                records.providerTokens.remove(records.providerTokenOrder[records.providerTokenOrderStart])
                records.providerTokenOrder[records.providerTokenOrderStart] = token
                records.providerTokenOrderStart = (records.providerTokenOrderStart + 1) % limit
            }
        }
    }

    /// Distinct provider tokens seen (a token forgotten and seen again counts twice).
    var providerTokenCount: Int { records.withLock { $0.distinctProviderTokens } }

    /// Provider tokens remembered now.
    var rememberedProviderTokenCount: Int { records.withLock { $0.providerTokens.count } }

    /// A connection accepted a stream with `open` streams open (this one included) while `limit`
    /// was its stream limit, acknowledged by the client.
    func openStreams(_ open: Int, underLimit limit: Int) {
        records.withLock { records in
            records.peakStreamsByLimit[limit] = max(records.peakStreamsByLimit[limit] ?? 0, open)
        }
    }

    var peakStreamsByLimit: [Int: Int] { records.withLock { $0.peakStreamsByLimit } }

    func countRequest() {
        requestTotal.wrappingAdd(1, ordering: .relaxed)
    }

    func accepted(_ record: @autoclosure () -> AcceptedNotification) {
        acceptedTotal.wrappingAdd(1, ordering: .relaxed)
        guard recordLimit > 0 else { return }
        let record = record()
        records.withLock { records in
            // A ring of the latest `recordLimit` records.
            if records.accepted.count < recordLimit {
                records.accepted.append(record)
            } else {
                records.accepted[records.acceptedStart] = record
                records.acceptedStart = (records.acceptedStart + 1) % recordLimit
            }
        }
    }

    func rejected(_ record: RejectedNotification) {
        records.withLock { records in
            records.rejectedByReason[record.reason, default: 0] += 1
            if records.rejected.count < recordLimit { records.rejected.append(record) }
        }
    }

    var acceptedRecords: [AcceptedNotification] {
        records.withLock { records in
            Array(records.accepted[records.acceptedStart...] + records.accepted[..<records.acceptedStart])
        }
    }

    var rejectedRecords: [RejectedNotification] { records.withLock { $0.rejected } }
    var rejectedByReason: [String: Int] { records.withLock { $0.rejectedByReason } }

    var script: MockScript { records.withLock { $0.script } }

    func updateScript(_ body: (inout MockScript) -> Void) {
        records.withLock { records in
            let oldSeed = records.script.randomFaults?.seed
            body(&records.script)
            if let seed = records.script.randomFaults?.seed, seed != oldSeed { records.random = SplitMix64(seed: seed) }
        }
    }

    /// The fault for a request to `token`, if the script has one: a token fault first (counting
    /// down its `times`), else a random one.
    func fault(for token: Substring) -> MockFault? {
        records.withLock { records in
            if !records.script.tokenFaults.isEmpty, let scripted = records.script.tokenFaults[String(token)] {
                if let times = scripted.times {
                    if times <= 1 {
                        records.script.tokenFaults[String(token)] = nil
                    } else {
                        records.script.tokenFaults[String(token)]?.times = times - 1
                    }
                }
                return scripted.fault
            }
            guard let random = records.script.randomFaults, !random.faults.isEmpty, random.rate > 0 else { return nil }
            let roll = Double(records.random.next() >> 11) / Double(1 << 53)
            guard roll < random.rate else { return nil }
            return random.faults[Int(records.random.next() % UInt64(random.faults.count))]
        }
    }

    var unregistered: [String: Date] { records.withLock { $0.script.unregistered } }

    /// The connection-level part of the script, read once per connection.
    func connectionScript(connection: Int) -> MockConnectionScript {
        records.withLock { records in
            let script = records.script
            if let first = script.connectionEventsForFirstConnections, connection > first { return .none }
            return MockConnectionScript(goAway: script.goAwayAfterStreams, drop: script.dropConnectionAfterStreams, limits: script.streamLimitChanges)
        }
    }
}

