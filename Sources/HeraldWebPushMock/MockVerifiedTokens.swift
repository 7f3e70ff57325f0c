import HeraldWebPush
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `Authorization: vapid` headers the mock has verified, until their token expires: an ECDSA
/// verification per request would cost the mock more than the client's sending, and a client
/// reuses one token for hours. Bounded: past ``capacity`` the expired entries go first, then any.
final class MockVerifiedTokens: Sendable {
    let capacity: Int
    private let entries = Mutex<[String: VerifiedVAPID]>([:])

    init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    /// Verifies `authorization` for `origin` at `now` (``VAPID/verify(authorization:origin:now:)``),
    /// or answers from the cache when the same header verified before and has not expired.
    func verify(_ authorization: String, origin: String, now: Date) throws(WebPushError) -> VerifiedVAPID {
        let seconds = Int(now.timeIntervalSince1970)
        let cached = entries.withLock { entries -> VerifiedVAPID? in
            guard let entry = entries[authorization] else { return nil }
            if Int(entry.claims.expiresAt.timeIntervalSince1970) > seconds { return entry }
            entries[authorization] = nil
            return nil
        }
        if let cached { return cached }
        let verified = try VAPID.verify(authorization: authorization, origin: origin, now: now)
        entries.withLock { entries in
            if entries[authorization] == nil, entries.count >= capacity {
                entries = entries.filter { Int($0.value.claims.expiresAt.timeIntervalSince1970) > seconds }
                if entries.count >= capacity { entries.remove(at: entries.startIndex) }
            }
            entries[authorization] = verified
        }
        return verified
    }

    /// Headers held now (at most ``capacity``).
    var count: Int { entries.withLock { $0.count } }
}
