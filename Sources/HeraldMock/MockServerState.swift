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
        var peakStreamsByLimit: [Int: Int] = [:]
    }

    let recordLimit: Int
    private let records: Mutex<Records>
    private let acceptedTotal = Atomic<Int>(0)
    private let requestTotal = Atomic<Int>(0)
    private let connectionTotal = Atomic<Int>(0)
    private let refusedTotal = Atomic<Int>(0)

    init(script: MockScript, recordLimit: Int) {
        self.recordLimit = recordLimit
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

    /// A connection started using a provider token (first use, or a change).
    func sawProviderToken(_ token: String) {
        records.withLock { _ = $0.providerTokens.insert(token) }
    }

    var providerTokenCount: Int { records.withLock { $0.providerTokens.count } }

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
    func connectionScript(connection: Int) -> (goAway: (count: Int, reason: String)?, drop: Int?, limits: [(afterStreams: Int, limit: Int)]) {
        records.withLock { records in
            let script = records.script
            if let first = script.connectionEventsForFirstConnections, connection > first { return (nil, nil, []) }
            return (script.goAwayAfterStreams, script.dropConnectionAfterStreams, script.streamLimitChanges)
        }
    }
}

