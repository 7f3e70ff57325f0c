import Crypto
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A browser's push subscription: what a page's `subscription.toJSON()` gives,
/// `{"endpoint": …, "expirationTime": …, "keys": {"p256dh": …, "auth": …}}`, checked.
public struct WebPushSubscription: Sendable, Hashable {
    /// The longest endpoint accepted, in bytes. Real ones are 150-500.
    public static let maximumEndpointCount = 2048

    /// The push resource: a URL at the browser's push service.
    public let endpoint: URL
    /// The endpoint's origin (`https://web.push.apple.com`): the VAPID token's `aud`.
    public let origin: String
    /// `keys.p256dh`: the browser's public key, the 65-byte uncompressed P-256 point.
    public let p256dh: [UInt8]
    /// `keys.auth`: the browser's 16-byte auth secret. A secret: never logged.
    public let authSecret: [UInt8]
    /// `expirationTime`, when the browser set one.
    public let expirationTime: Date?
    let userAgentKey: P256.KeyAgreement.PublicKey
    /// The request target, percent-encoded as the browser gave it (`/path?query`), and where to
    /// connect: worked out once, not per message.
    let requestTarget: String
    let host: String
    let port: Int
    let isHTTPS: Bool

    /// A subscription from its parts; base64url (with or without padding) for the keys. The
    /// error names the field that is wrong.
    public init(endpoint: String, p256dh: String, auth: String, expirationTime: Date? = nil, policy: Policy = .standard) throws(WebPushError) {
        guard endpoint.utf8.count <= Self.maximumEndpointCount else {
            throw WebPushError(.invalidSubscription, "endpoint: at most \(Self.maximumEndpointCount) bytes; this one has \(endpoint.utf8.count)")
        }
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil, let origin = VAPID.origin(of: url)
        else {
            throw WebPushError(.invalidSubscription, "endpoint: not an absolute http(s) URL with a host: \(PeerText(endpoint, limit: 120))")
        }
        if scheme != "https" {
            guard scheme == "http", policy.allowsLoopbackHTTP, Policy.isLoopback(host: host) else {
                throw WebPushError(.invalidSubscription, "endpoint: must be an https: URL (push services are reached over TLS)")
            }
        }
        guard let key = Base64URL.decode(p256dh) else {
            throw WebPushError(.invalidSubscription, "keys.p256dh: not base64url")
        }
        guard key.count == 65, key.first == 0x04, let userAgentKey = try? P256.KeyAgreement.PublicKey(x963Representation: key) else {
            throw WebPushError(.invalidSubscription, "keys.p256dh: must be an uncompressed P-256 point on the curve (65 bytes starting 0x04); this one is \(key.count) bytes")
        }
        guard let secret = Base64URL.decode(auth) else {
            throw WebPushError(.invalidSubscription, "keys.auth: not base64url")
        }
        guard secret.count == 16 else {
            throw WebPushError(.invalidSubscription, "keys.auth: must be 16 bytes; this one is \(secret.count)")
        }
        if let refusal = policy.refusal(host: host) {
            throw WebPushError(.endpointNotAllowed, "endpoint: \(refusal)")
        }
        self.endpoint = url
        self.origin = origin
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        self.requestTarget = target
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
        self.isHTTPS = scheme == "https"
        self.p256dh = key
        self.authSecret = secret
        self.expirationTime = expirationTime
        self.userAgentKey = userAgentKey
    }

    /// A subscription from `subscription.toJSON()`'s JSON text.
    public init(json: some Collection<UInt8>, policy: Policy = .standard) throws(WebPushError) {
        guard json.count <= 8192 else { throw WebPushError(.invalidSubscription, "a subscription's JSON is at most 8192 bytes") }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: json)
        } catch {
            throw WebPushError(.invalidSubscription, "the subscription is not JSON: \(error)")
        }
        try self.init(json: value, policy: policy)
    }

    /// A subscription from its parsed JSON.
    public init(json value: JSONValue, policy: Policy = .standard) throws(WebPushError) {
        guard value.objectValue != nil else { throw WebPushError(.invalidSubscription, "a subscription is a JSON object") }
        guard let endpoint = value["endpoint"]?.stringValue else { throw WebPushError(.invalidSubscription, "endpoint: required, a string") }
        guard let p256dh = value["keys"]?["p256dh"]?.stringValue else { throw WebPushError(.invalidSubscription, "keys.p256dh: required, a string") }
        guard let auth = value["keys"]?["auth"]?.stringValue else { throw WebPushError(.invalidSubscription, "keys.auth: required, a string") }
        var expiration: Date?
        switch value["expirationTime"] {
        case nil, .null?: break
        case let number?:
            guard let milliseconds = number.doubleValue, milliseconds.isFinite, milliseconds >= 0, milliseconds < 1e15 else {
                throw WebPushError(.invalidSubscription, "expirationTime: null or milliseconds since 1970")
            }
            expiration = Date(timeIntervalSince1970: milliseconds / 1000)
        }
        try self.init(endpoint: endpoint, p256dh: p256dh, auth: auth, expirationTime: expiration, policy: policy)
    }

    /// The subscription as `toJSON()` gives it.
    public var json: JSONValue {
        .object([
            "endpoint": .string(endpoint.absoluteString),
            "expirationTime": expirationTime.map { .int(Int($0.timeIntervalSince1970 * 1000)) } ?? .null,
            "keys": .object(["p256dh": .string(Base64URL.encode(p256dh)), "auth": .string(Base64URL.encode(authSecret))]),
        ])
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.endpoint == rhs.endpoint && lhs.p256dh == rhs.p256dh && lhs.authSecret == rhs.authSecret && lhs.expirationTime == rhs.expirationTime
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(endpoint)
        hasher.combine(p256dh)
    }
}

extension WebPushSubscription: CustomStringConvertible {
    /// The endpoint's origin and the key's first bytes; never the auth secret or the endpoint's
    /// path (which is itself a bearer capability at some services).
    public var description: String { "WebPushSubscription(\(origin), p256dh \(Base64URL.encode(p256dh.prefix(6)))…)" }
}
