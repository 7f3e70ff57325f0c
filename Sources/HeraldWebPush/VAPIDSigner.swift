import HeraldCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Signs the `Authorization` header for each push service origin: one token per origin, reused
/// until it is within ``renewalMargin`` of its expiry, never one per message (signing is an ECDSA
/// operation; a token per message would cost as much as the encryption).
public final class VAPIDSigner: Sendable {
    /// The key that signs.
    public let key: VAPIDKey
    /// The `sub` claim.
    public let subject: String
    /// How long each token lives (`exp` − now): at most 24 hours (RFC 8292 §2); default 12 hours,
    /// so a clock ahead of the push service's by hours is still accepted.
    public let lifetime: Duration
    /// A token is replaced once it has less than this left; default an hour.
    public let renewalMargin: Duration
    /// At most this many origins are remembered; a new one past it replaces them all. Push
    /// services are a handful (Apple, Google, Mozilla, Microsoft); the bound is against endpoints
    /// of many made-up origins.
    public static let maximumOrigins = 64

    private let cache = Mutex<[String: Entry]>([:])

    private struct Entry {
        var header: String
        var expiresAt: Date
    }

    /// A signer for `key` with the contact `subject` (`mailto:` or `https:`, checked here).
    public init(key: VAPIDKey, subject: String, lifetime: Duration = .seconds(12 * 3600), renewalMargin: Duration = .seconds(3600)) throws(WebPushError) {
        try VAPID.checkSubject(subject)
        guard lifetime > renewalMargin, lifetime <= VAPID.maximumLifetime, renewalMargin >= .zero else {
            throw WebPushError(.invalidKey, "the VAPID token lifetime must be at most 24 hours and longer than the renewal margin")
        }
        self.key = key
        self.subject = subject
        self.lifetime = lifetime
        self.renewalMargin = renewalMargin
    }

    /// The `Authorization` header for a request to `origin` at `now`.
    public func authorization(origin: String, now: Date = Date()) throws(WebPushError) -> String {
        let margin = TimeInterval(renewalMargin.components.seconds)
        if let entry = cache.withLock({ $0[origin] }), entry.expiresAt.timeIntervalSince(now) > margin {
            return entry.header
        }
        let claims = VAPIDClaims(audience: origin, expiresAt: now.addingTimeInterval(TimeInterval(lifetime.components.seconds)), subject: subject)
        let header = VAPID.authorization(token: try VAPID.token(key: key, claims: claims), key: key)
        cache.withLock { cache in
            if cache[origin] == nil, cache.count >= Self.maximumOrigins { cache.removeAll() }
            cache[origin] = Entry(header: header, expiresAt: claims.expiresAt)
        }
        return header
    }
}
