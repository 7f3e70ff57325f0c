import HeraldCore
import HeraldLegacyWire
import NIOCore
import Synchronization

/// What the mock gateway counts and records, and its script: shared by all its connections.
final class MockLegacyState: Sendable {
    /// What to do with a notification that parsed.
    enum Decision: Equatable {
        case accept
        /// Accept it, then answer status 10 naming it and close.
        case acceptAndShutDown
        case reject(LegacyStatus)
    }

    private struct Records {
        var script: MockLegacyScript {
            didSet { statusesByToken = Self.byBytes(script.tokenStatuses) }
        }
        /// The script's token statuses keyed by raw bytes, so no frame needs converting to hex.
        var statusesByToken: [[UInt8]: LegacyStatus]
        var received = 0
        var accepted = 0
        var rejectedByStatus: [UInt8: Int] = [:]
        var acceptedFrames: [LegacyFrame] = []
        var rejections: [MockLegacyRejection] = []
        var shutdownSent = false
        var shutdownResponses = 0
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionCount = 0

        init(script: MockLegacyScript) {
            self.script = script
            statusesByToken = Self.byBytes(script.tokenStatuses)
        }

        static func byBytes(_ statuses: [String: LegacyStatus]) -> [[UInt8]: LegacyStatus] {
            var result: [[UInt8]: LegacyStatus] = [:]
            for (hex, status) in statuses {
                if let token = try? DeviceToken(hex) { result[token.bytes] = status }
            }
            return result
        }
    }

    let recordLimit: Int
    private let records: Mutex<Records>

    init(script: MockLegacyScript, recordLimit: Int) {
        self.recordLimit = recordLimit
        records = Mutex(Records(script: script))
    }

    var script: MockLegacyScript { records.withLock { $0.script } }

    func updateScript(_ body: (inout MockLegacyScript) -> Void) {
        records.withLock { body(&$0.script) }
    }

    /// Counts `frame` and decides its answer by the script.
    func decide(_ frame: LegacyFrame) -> Decision {
        records.withLock { records in
            records.received += 1
            var status = records.script.statusesByPosition.isEmpty ? nil : records.script.statusesByPosition.removeValue(forKey: records.received)
            if status == nil, !records.statusesByToken.isEmpty { status = records.statusesByToken[frame.token] }
            if let status {
                record(MockLegacyRejection(status: status, identifier: frame.identifier ?? 0, token: frame.token), in: &records)
                return .reject(status)
            }
            records.accepted += 1
            if records.acceptedFrames.count < recordLimit { records.acceptedFrames.append(frame) }
            if let after = records.script.shutdownAfterAccepted, records.accepted >= after, !records.shutdownSent {
                records.shutdownSent = true
                return .acceptAndShutDown
            }
            return .accept
        }
    }

    /// A status 10 (shutdown) response was sent.
    func sentShutdown() {
        records.withLock { $0.shutdownResponses += 1 }
    }

    var shutdownResponseCount: Int { records.withLock { $0.shutdownResponses } }

    /// A notification that did not parse.
    func invalid(_ response: LegacyErrorResponse) {
        records.withLock { record(MockLegacyRejection(status: response.status, identifier: response.identifier, token: nil), in: &$0) }
    }

    private func record(_ rejection: MockLegacyRejection, in records: inout Records) {
        records.rejectedByStatus[rejection.status.rawValue, default: 0] += 1
        if records.rejections.count < recordLimit { records.rejections.append(rejection) }
    }

    var errorResponseDelay: Duration { records.withLock { $0.script.errorResponseDelay } }
    var receivedCount: Int { records.withLock { $0.received } }
    var acceptedCount: Int { records.withLock { $0.accepted } }
    var rejectedByStatus: [UInt8: Int] { records.withLock { $0.rejectedByStatus } }
    var acceptedFrames: [LegacyFrame] { records.withLock { $0.acceptedFrames } }
    var rejections: [MockLegacyRejection] { records.withLock { $0.rejections } }
    var connectionCount: Int { records.withLock { $0.connectionCount } }

    func opened(_ channel: any Channel) {
        records.withLock { records in
            records.connections[ObjectIdentifier(channel)] = channel
            records.connectionCount += 1
        }
    }

    func closed(_ channel: any Channel) {
        _ = records.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var openConnections: [any Channel] { records.withLock { Array($0.connections.values) } }
}

/// A notification the mock gateway answered with an error response.
public struct MockLegacyRejection: Sendable, Hashable {
    public var status: LegacyStatus
    /// The identifier in the response (0 when the notification had none or did not parse).
    public var identifier: UInt32
    /// The token, when the notification parsed.
    public var token: [UInt8]?
}
