import HeraldCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The mock's broadcast channels, per app (apns-spec §1.9): at most 10 000 per app.
final class MockChannelStore: Sendable {
    static let maximumPerApp = 10_000

    private let channels = Mutex<[String: [String: ChannelStoragePolicy]]>([:])
    private let broadcastTotal = Atomic<Int>(0)

    func create(bundleID: String, policy: ChannelStoragePolicy) -> String? {
        channels.withLock { channels in
            guard channels[bundleID, default: [:]].count < Self.maximumPerApp else { return nil }
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            channels[bundleID, default: [:]][id] = policy
            return id
        }
    }

    func policy(of id: String, bundleID: String) -> ChannelStoragePolicy? {
        channels.withLock { $0[bundleID]?[id] }
    }

    func delete(_ id: String, bundleID: String) -> Bool {
        channels.withLock { $0[bundleID]?.removeValue(forKey: id) != nil }
    }

    func list(bundleID: String) -> [String] {
        channels.withLock { ($0[bundleID] ?? [:]).keys.sorted() }
    }

    func countBroadcast() { broadcastTotal.wrappingAdd(1, ordering: .relaxed) }
    var broadcastCount: Int { broadcastTotal.load(ordering: .relaxed) }
}
