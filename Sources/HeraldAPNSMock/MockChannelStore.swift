import HeraldCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The mock's broadcast channels, per app (apns-spec §1.9): at most 10 000 per app, and at most
/// `maximumChannels` over all apps.
final class MockChannelStore: Sendable {
    static let maximumPerApp = 10_000

    private let channels = Mutex<(byApp: [String: [String: ChannelStoragePolicy]], count: Int)>(([:], 0))
    private let broadcastTotal = Atomic<Int>(0)
    let maximumChannels: Int

    init(maximumChannels: Int = 100_000) {
        self.maximumChannels = maximumChannels
    }

    func create(bundleID: String, policy: ChannelStoragePolicy) -> String? {
        channels.withLock { channels in
            guard channels.count < maximumChannels, channels.byApp[bundleID, default: [:]].count < Self.maximumPerApp else { return nil }
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            channels.byApp[bundleID, default: [:]][id] = policy
            channels.count += 1
            return id
        }
    }

    func policy(of id: String, bundleID: String) -> ChannelStoragePolicy? {
        channels.withLock { $0.byApp[bundleID]?[id] }
    }

    func delete(_ id: String, bundleID: String) -> Bool {
        channels.withLock { channels in
            guard channels.byApp[bundleID]?.removeValue(forKey: id) != nil else { return false }
            channels.count -= 1
            if channels.byApp[bundleID]?.isEmpty == true { channels.byApp[bundleID] = nil }
            return true
        }
    }

    func list(bundleID: String) -> [String] {
        channels.withLock { ($0.byApp[bundleID] ?? [:]).keys.sorted() }
    }

    /// Channels over all apps.
    var count: Int { channels.withLock { $0.count } }

    func countBroadcast() { broadcastTotal.wrappingAdd(1, ordering: .relaxed) }
    var broadcastCount: Int { broadcastTotal.load(ordering: .relaxed) }
}
