import HeraldCore
import _CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The claims of the OAuth 2.0 assertion a service account exchanges for an access token
/// (Google's "Using OAuth 2.0 for Server to Server Applications"; RFC 7523).
public struct FCMAssertionClaims: Sendable, Hashable {
    /// `iss`: the service account's `client_email`.
    public var issuer: String
    /// `scope`: space-separated scopes; FCM's is ``FCMAssertion/messagingScope``.
    public var scope: String
    /// `aud`: the token URI the assertion is sent to.
    public var audience: String
    /// `iat`, in whole seconds since 1970.
    public var issuedAt: Int
    /// `exp`, in whole seconds since 1970: at most an hour after `iat`.
    public var expiresAt: Int

    public init(issuer: String, scope: String, audience: String, issuedAt: Int, expiresAt: Int) {
        self.issuer = issuer
        self.scope = scope
        self.audience = audience
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// The scopes, split at spaces.
    public var scopes: [Substring] { scope.split(separator: " ") }
}

/// Signing and verifying the service account's assertion: a JWT with header
/// `{"alg":"RS256","typ":"JWT","kid":private_key_id}`, signed with RSASSA-PKCS1-v1_5 and SHA-256
/// by swift-crypto's RSA (RFC 7518 §3.3).
public enum FCMAssertion {
    /// The scope that lets an access token send FCM messages.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The broad scope Google's SDKs also ask for; it covers FCM.
    public static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
    /// Google refuses an assertion that lives longer than an hour.
    public static let maximumLifetime = 3600
    /// The longest assertion a token endpoint reads.
    public static let maximumCount = 16 << 10

    /// Signs an assertion for `account`, issued at `now` and living `lifetime` seconds (1 to an hour).
    public static func sign(for account: FCMServiceAccount, now: Date = Date(), lifetime: Int = maximumLifetime, scope: String = messagingScope)
        throws(FCMError) -> String
    {
        let issued = Int(now.timeIntervalSince1970.rounded(.down))
        let claims = FCMAssertionClaims(
            issuer: account.clientEmail, scope: scope, audience: account.tokenURI, issuedAt: issued, expiresAt: issued + min(max(1, lifetime), maximumLifetime))
        var header = JSONWriter(capacity: 96)
        header.beginObject()
        header.key("alg")
        header.string("RS256")
        header.key("typ")
        header.string("JWT")
        header.key("kid")
        header.string(account.privateKeyID)
        header.endObject()
        var body = JSONWriter(capacity: 256)
        body.beginObject()
        body.key("iss")
        body.string(claims.issuer)
        body.key("scope")
        body.string(claims.scope)
        body.key("aud")
        body.string(claims.audience)
        body.key("iat")
        body.int(claims.issuedAt)
        body.key("exp")
        body.int(claims.expiresAt)
        body.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(body.bytes)
        let signature: _RSA.Signing.RSASignature
        do {
            signature = try account.privateKey.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        } catch {
            throw FCMError(.invalidServiceAccount, "RS256 signing with the service account's private_key failed")
        }
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Verifies an assertion as a token endpoint does: RS256 with `publicKey`, a `kid` (when the
    /// header has one) equal to `keyID`, `iss` equal to `issuer`, `aud` one of `audiences`, a scope that covers FCM, `iat` not in the future
    /// (beyond `leeway` seconds), `exp` after now and at most an hour after `iat`. The error
    /// names the failed check.
    public static func verify(
        _ assertion: String, publicKey: _RSA.Signing.PublicKey, issuer: String, keyID: String? = nil, audiences: Set<String>, now: Date = Date(),
        leeway: Int = 60
    ) throws(FCMError) -> FCMAssertionClaims {
        guard assertion.utf8.count <= maximumCount else { throw FCMError(.invalidAssertion, "the assertion is over \(maximumCount) bytes") }
        guard let parts = JWTParts(assertion) else { throw FCMError(.invalidAssertion, "the assertion is not a JWT (three base64url parts)") }
        guard let header = try? JSONValue(parsing: parts.header), header["alg"]?.stringValue == "RS256" else {
            throw FCMError(.invalidAssertion, "the assertion's header must name alg RS256")
        }
        if let keyID, let kid = header["kid"], kid.stringValue != keyID {
            throw FCMError(.invalidAssertion, "the assertion's kid is not the service account's private_key_id")
        }
        guard publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: parts.signature), for: parts.signingInput, padding: .insecurePKCS1v1_5)
        else {
            throw FCMError(.invalidAssertion, "Invalid JWT Signature.")
        }
        guard let claims = try? JSONValue(parsing: parts.claims), claims.objectValue != nil else {
            throw FCMError(.invalidAssertion, "the assertion's claims are not a JSON object")
        }
        guard let iss = claims["iss"]?.stringValue, iss == issuer else { throw FCMError(.invalidAssertion, "the assertion's iss is not the service account's client_email") }
        guard let aud = claims["aud"]?.stringValue, audiences.contains(aud) else {
            throw FCMError(.invalidAssertion, "the assertion's aud is not this token endpoint")
        }
        guard let scope = claims["scope"]?.stringValue, scope.split(separator: " ").contains(where: { $0 == messagingScope || $0 == cloudPlatformScope }) else {
            throw FCMError(.invalidAssertion, "the assertion's scope does not include \(messagingScope) or \(cloudPlatformScope)")
        }
        guard let iat = claims["iat"]?.intValue, let exp = claims["exp"]?.intValue else {
            throw FCMError(.invalidAssertion, "the assertion needs whole-number iat and exp claims")
        }
        let seconds = Int(now.timeIntervalSince1970)
        guard iat <= seconds + leeway else { throw FCMError(.invalidAssertion, "the assertion's iat is in the future") }
        guard exp > seconds else { throw FCMError(.invalidAssertion, "the assertion expired") }
        // Checked: both are the peer's numbers.
        let (lifetime, overflow) = exp.subtractingReportingOverflow(iat)
        guard !overflow, lifetime > 0, lifetime <= maximumLifetime else {
            throw FCMError(.invalidAssertion, "the assertion's exp must be after iat and at most \(maximumLifetime) seconds after it")
        }
        return FCMAssertionClaims(issuer: iss, scope: scope, audience: aud, issuedAt: iat, expiresAt: exp)
    }
}
