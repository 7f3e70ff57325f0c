import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Something the mock does instead of (or before) answering a request normally.
public enum MockFault: Sendable, Hashable {
    /// Answer with this status and reason (and, for 410, a timestamp).
    case reject(status: Int, reason: String, timestamp: Date? = nil)
    /// Wait, then answer normally.
    case delay(Duration)
    /// Never answer.
    case noResponse
    /// Close the TCP connection when this request arrives, answering nothing on it.
    case dropConnection
    /// Send GOAWAY whose last stream ID is the one before this request, with `{"reason": …}`,
    /// and close once the earlier streams are answered. This request and any after it are not processed.
    case goAway(reason: String)
    /// Send SETTINGS with a new SETTINGS_MAX_CONCURRENT_STREAMS, then answer normally.
    case setMaximumConcurrentStreams(Int)
    /// Answer as soon as the headers arrive, before reading the body, then reset the stream with
    /// NO_ERROR (as HTTP/2 allows and nginx does).
    case answerBeforeBody
    /// Reset the stream with REFUSED_STREAM without processing it: the client may send it again.
    case refuseStream

    /// `reject` with the status APNs uses for `reason` (``APNSReason/status``; 400 for a reason
    /// Herald does not know). For a status APNs would not pair with the reason, script
    /// ``reject(status:reason:timestamp:)`` directly.
    public static func reject(_ reason: APNSReason, timestamp: Date? = nil) -> MockFault {
        .reject(status: reason.status ?? 400, reason: reason.rawValue, timestamp: timestamp)
    }
}

/// What the mock does, and when: faults for given tokens, faults at a seeded random rate, and
/// per-connection events. Change it while the server runs with ``MockAPNSServer/updateScript(_:)``.
public struct MockScript: Sendable {
    /// A fault for one token, for its next `times` requests (`nil`: every request).
    public struct TokenFault: Sendable, Hashable {
        public var fault: MockFault
        public var times: Int?
        public init(_ fault: MockFault, times: Int? = nil) {
            self.fault = fault
            self.times = times
        }
    }

    /// Faults drawn at random for a fraction of requests, reproducibly from a seed.
    public struct RandomFaults: Sendable, Hashable {
        /// The fraction of requests that get a fault, 0...1.
        public var rate: Double
        public var seed: UInt64
        /// The faults to pick from, uniformly.
        public var faults: [MockFault]
        public init(rate: Double, seed: UInt64, faults: [MockFault]) {
            self.rate = rate
            self.seed = seed
            self.faults = faults
        }
    }

    /// Faults per device token.
    public var tokenFaults: [String: TokenFault] = [:]
    /// Faults at a random rate.
    public var randomFaults: RandomFaults?
    /// Tokens answered with 410 `Unregistered` and this timestamp.
    public var unregistered: [String: Date] = [:]
    /// On each connection, send GOAWAY (with this reason) when the stream after the first N arrives.
    public var goAwayAfterStreams: (count: Int, reason: String)?
    /// On each connection, drop the TCP connection when the stream after the first N arrives.
    public var dropConnectionAfterStreams: Int?
    /// On each connection, change SETTINGS_MAX_CONCURRENT_STREAMS after N streams: (N, new limit), in order.
    public var streamLimitChanges: [(afterStreams: Int, limit: Int)] = []
    /// Apply connection events (GOAWAY, drop, limit changes) to the first `n` connections only; `nil`: all.
    public var connectionEventsForFirstConnections: Int?

    public init() {}

    /// Scripts `fault` for `token` (hex, any case).
    public mutating func fail(_ token: String, with fault: MockFault, times: Int? = nil) {
        tokenFaults[token.lowercased()] = TokenFault(fault, times: times)
    }

    /// Marks `token` as unregistered since `since`.
    public mutating func unregister(_ token: String, since: Date = Date()) {
        unregistered[token.lowercased()] = since
    }
}
