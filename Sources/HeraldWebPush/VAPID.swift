import Crypto
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The claims of a VAPID JWT (RFC 8292 §2).
public struct VAPIDClaims: Sendable, Hashable {
    /// `aud`: the origin of the push resource (`https://web.push.apple.com`), no path.
    public var audience: String
    /// `exp`: whole seconds; at most 24 hours after the request (RFC 8292 §2).
    public var expiresAt: Date
    /// `sub`: a `mailto:` or `https:` contact (Apple refuses a token without one: `BadJwtToken`).
    public var subject: String

    public init(audience: String, expiresAt: Date, subject: String) {
        self.audience = audience
        self.expiresAt = Date(timeIntervalSince1970: expiresAt.timeIntervalSince1970.rounded(.down))
        self.subject = subject
    }
}

/// What a push service learns from a verified `Authorization: vapid` header.
public struct VerifiedVAPID: Sendable, Hashable {
    /// `k`: the application server's public key, the 65-byte uncompressed point.
    public var publicKey: [UInt8]
    public var claims: VAPIDClaims
}

/// Signing and verifying VAPID tokens (RFC 8292): an ES256 JWT with header
/// `{"typ":"JWT","alg":"ES256"}` and claims `aud`, `exp`, `sub`, sent as
/// `Authorization: vapid t=<JWT>, k=<public key>`.
public enum VAPID {
    /// The longest a token may live, counted from the request (RFC 8292 §2; Apple: "more than one
    /// day into the future" is `BadJwtToken`).
    public static let maximumLifetime: Duration = .seconds(24 * 3600)

    /// Checks a `sub`: `mailto:` with an address, or an `https:` URL; no spaces or angle brackets
    /// (Apple refuses `mailto: <a@b>` with `BadJwtToken`), and a domain the push service can
    /// reach (Apple answers `BadJwtToken` to `mailto:…@localhost`, web-push-libs/web-push#947).
    public static func checkSubject(_ subject: String) throws(WebPushError) {
        let lowered = subject.lowercased()
        let rest: Substring
        if lowered.hasPrefix("mailto:") {
            rest = subject.dropFirst(7)
            guard rest.contains("@"), !rest.hasPrefix("@"), !rest.hasSuffix("@") else {
                throw WebPushError(.invalidSubject, "the VAPID subject 'mailto:' needs an address, e.g. mailto:ops@example.com")
            }
        } else if lowered.hasPrefix("https://") {
            rest = subject.dropFirst(8)
            guard !rest.isEmpty else { throw WebPushError(.invalidSubject, "the VAPID subject 'https://' needs a host, e.g. https://example.com") }
        } else {
            throw WebPushError(
                .invalidSubject, "the VAPID subject must be a mailto: address or an https: URL (RFC 8292 §2.1), e.g. mailto:ops@example.com; got \(PeerText(subject))")
        }
        guard subject.count <= 1024, subject.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "<" && $0 != ">" }) else {
            throw WebPushError(.invalidSubject, "the VAPID subject must be one printable ASCII word without spaces or angle brackets (push services refuse 'mailto: <a@b>'), at most 1024 characters")
        }
        // The domain: after the address's last @ (before any ?query), or the URL's host.
        let domain = lowered.hasPrefix("mailto:")
            ? String(rest.lowercased().split(separator: "?", maxSplits: 1).first?.split(separator: "@").last ?? "")
            : String(rest.lowercased().prefix { $0 != "/" && $0 != ":" && $0 != "?" && $0 != "#" })
        let local = domain == "localhost" || domain.hasSuffix(".localhost") || domain.hasSuffix(".local")
        guard domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."), !local else {
            throw WebPushError(
                .invalidSubject,
                "the VAPID subject's domain '\(PeerText(domain))' is not one a push service can reach (Apple refuses localhost and names without a dot with BadJwtToken); give a real contact, e.g. mailto:ops@example.com")
        }
    }

    /// Signs a token.
    public static func token(key: VAPIDKey, claims: VAPIDClaims) throws(WebPushError) -> String {
        var header = JSONWriter(capacity: 32)
        header.beginObject()
        header.key("typ")
        header.string("JWT")
        header.key("alg")
        header.string("ES256")
        header.endObject()
        var body = JSONWriter(capacity: 128)
        body.beginObject()
        body.key("aud")
        body.string(claims.audience)
        body.key("exp")
        body.int(Int(claims.expiresAt.timeIntervalSince1970))
        body.key("sub")
        body.string(claims.subject)
        body.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(body.bytes)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try key.privateKey.signature(for: Array(signingInput.utf8))
        } catch {
            throw WebPushError(.invalidKey, "ES256 signing with the VAPID key failed")
        }
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// The `Authorization` header value for a token: `vapid t=<JWT>, k=<public key>`.
    public static func authorization(token: String, key: VAPIDKey) -> String {
        "vapid t=" + token + ", k=" + key.publicKeyBase64URL
    }

    /// The origin (`scheme://host[:port]`) of a push endpoint: a token's `aud`. The port is kept
    /// only when it is not the scheme's default.
    public static func origin(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = endpoint.host, !host.isEmpty else {
            return nil
        }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        if let port = endpoint.port, port != (scheme == "https" ? 443 : 80) {
            return scheme + "://" + bracketed.lowercased() + ":" + String(port)
        }
        return scheme + "://" + bracketed.lowercased()
    }

    /// Verifies an `Authorization: vapid t=…, k=…` header as a push service does: the signature
    /// against `k`, `aud` equal to `origin`, `exp` in the future and at most 24 hours ahead, and
    /// `sub` a `mailto:` or `https:` contact. The error says which check failed.
    public static func verify(authorization: String, origin: String, now: Date = Date()) throws(WebPushError) -> VerifiedVAPID {
        guard authorization.utf8.count <= 4096 else { throw WebPushError(.invalidVAPID, "the Authorization header is over 4096 bytes") }
        let lowered = authorization.lowercased()
        guard lowered.hasPrefix("vapid ") else {
            throw WebPushError(.invalidVAPID, "the Authorization header must use the vapid scheme: 'vapid t=<JWT>, k=<public key>' (RFC 8292 §3)")
        }
        var token: Substring?
        var key: Substring?
        for parameter in authorization.dropFirst(6).split(separator: ",") {
            let trimmed = parameter.drop(while: { $0 == " " })
            if trimmed.hasPrefix("t=") { token = trimmed.dropFirst(2) } else if trimmed.hasPrefix("k=") { key = trimmed.dropFirst(2) }
        }
        guard let token, !token.isEmpty else { throw WebPushError(.invalidVAPID, "the vapid Authorization header has no t= token") }
        guard let key, let keyBytes = Base64URL.decode(key), keyBytes.count == 65,
            let publicKey = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else {
            throw WebPushError(.invalidVAPID, "the vapid k= parameter must be a P-256 public key, 65 bytes uncompressed, base64url")
        }
        guard let parts = JWTParts(token) else { throw WebPushError(.invalidVAPID, "the vapid token is not a JWT (three base64url parts)") }
        guard let header = try? JSONValue(parsing: parts.header), header["alg"]?.stringValue == "ES256" else {
            throw WebPushError(.invalidVAPID, "the vapid token's header must name alg ES256")
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature), publicKey.isValidSignature(signature, for: parts.signingInput)
        else {
            throw WebPushError(.invalidVAPID, "the vapid token's signature does not verify with its k= key")
        }
        guard let claims = try? JSONValue(parsing: parts.claims), let audience = claims["aud"]?.stringValue else {
            throw WebPushError(.invalidVAPID, "the vapid token has no aud claim")
        }
        guard audience == origin else {
            throw WebPushError(.invalidVAPID, "the vapid token's aud \(PeerText(audience)) is not this push service's origin \(origin)")
        }
        guard let expiry = claims["exp"]?.intValue else { throw WebPushError(.invalidVAPID, "the vapid token has no whole-number exp claim") }
        let seconds = Int(now.timeIntervalSince1970)
        guard expiry > seconds else { throw WebPushError(.invalidVAPID, "the vapid token expired") }
        guard expiry - seconds <= 24 * 3600 else { throw WebPushError(.invalidVAPID, "the vapid token's exp is more than 24 hours ahead") }
        guard let subject = claims["sub"]?.stringValue else { throw WebPushError(.invalidVAPID, "the vapid token has no sub claim") }
        do {
            try checkSubject(subject)
        } catch {
            throw WebPushError(.invalidVAPID, error.message)
        }
        return VerifiedVAPID(
            publicKey: keyBytes, claims: VAPIDClaims(audience: audience, expiresAt: Date(timeIntervalSince1970: TimeInterval(expiry)), subject: subject))
    }
}
