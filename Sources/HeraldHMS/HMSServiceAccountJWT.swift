import HeraldCore
import _CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The claims of a service-account JWT.
public struct HMSJWTClaims: Sendable, Hashable {
    /// `iss`: the account's `sub_account`.
    public var issuer: String
    /// `aud`: Huawei's token endpoint.
    public var audience: String
    /// `iat`, in whole seconds since 1970.
    public var issuedAt: Int
    /// `exp`, in whole seconds since 1970.
    public var expiresAt: Int
}

/// The bearer HarmonyOS NEXT's API (v3) takes: a JWT the service account signs itself, with
/// header `{"kid": key_id, "typ": "JWT", "alg": "PS256"}` and claims `iss` (`sub_account`), `aud`
/// (Huawei's token endpoint), `iat` and `exp`, signed with RSASSA-PSS and SHA-256 ("SHA256withRSA/PSS")
/// by swift-crypto (Huawei's "基于服务账号生成鉴权令牌",
/// https://developer.huawei.com/consumer/cn/doc/harmonyos-guides/push-jwt-token; RFC 7518 §3.5).
/// It is sent as it is, not exchanged for an access token.
public enum HMSServiceAccountJWT {
    /// The `aud` every JWT carries.
    public static let audience = HMSAppCredentials.huaweiTokenURI
    /// Huawei advises a JWT valid 3,600 seconds, reused within it ("建议JWT令牌过期时间设置为3600秒，有效期内可以复用",
    /// https://developer.huawei.com/consumer/en/doc/harmonyos-references/push-scenariozed-api-request-struct).
    public static let lifetime = 3600
    /// The longest JWT a verifier reads.
    public static let maximumCount = 16 << 10

    /// Signs a JWT for `account`, issued at `now`, living `lifetime` seconds (1 to an hour).
    public static func sign(for account: HMSServiceAccount, now: Date = Date(), lifetime: Int = lifetime) throws(HMSError) -> String {
        let issued = Int(now.timeIntervalSince1970.rounded(.down))
        var header = JSONWriter(capacity: 96)
        header.beginObject()
        header.key("kid")
        header.string(account.keyID)
        header.key("typ")
        header.string("JWT")
        header.key("alg")
        header.string("PS256")
        header.endObject()
        var body = JSONWriter(capacity: 256)
        body.beginObject()
        body.key("aud")
        body.string(audience)
        body.key("iss")
        body.string(account.subAccount)
        body.key("iat")
        body.int(issued)
        body.key("exp")
        body.int(issued + min(max(1, lifetime), Self.lifetime))
        body.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(body.bytes)
        let signature: _RSA.Signing.RSASignature
        do {
            signature = try account.privateKey.signature(for: Array(signingInput.utf8), padding: .PSS)
        } catch {
            throw HMSError(.invalidServiceAccount, "PS256 signing with the service account's private_key failed")
        }
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Verifies a JWT as Push Kit would: PS256 with `publicKey`, `kid` equal to `keyID`, `iss`
    /// equal to `issuer`, `aud` Huawei's token endpoint, `iat` not in the future (beyond `leeway`
    /// seconds), `exp` after now and at most an hour after `iat`. The error names the failed
    /// check; ``HMSError/Code/invalidJWT`` with "expired" for an expired one.
    public static func verify(
        _ jwt: String, publicKey: _RSA.Signing.PublicKey, keyID: String, issuer: String, now: Date = Date(), leeway: Int = 60
    ) throws(HMSError) -> HMSJWTClaims {
        guard jwt.utf8.count <= maximumCount else { throw HMSError(.invalidJWT, "the JWT is over \(maximumCount) bytes") }
        guard let parts = JWTParts(jwt) else { throw HMSError(.invalidJWT, "the JWT is not three base64url parts") }
        guard let header = try? JSONValue(parsing: parts.header), header["alg"]?.stringValue == "PS256" else {
            throw HMSError(.invalidJWT, "the JWT's header must name alg PS256")
        }
        guard header["kid"]?.stringValue == keyID else { throw HMSError(.invalidJWT, "the JWT's kid is not the service account's key_id") }
        guard publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: parts.signature), for: parts.signingInput, padding: .PSS) else {
            throw HMSError(.invalidJWT, "the JWT's signature does not verify")
        }
        guard let claims = try? JSONValue(parsing: parts.claims), claims.objectValue != nil else {
            throw HMSError(.invalidJWT, "the JWT's claims are not a JSON object")
        }
        guard let iss = claims["iss"]?.stringValue, iss == issuer else { throw HMSError(.invalidJWT, "the JWT's iss is not the service account's sub_account") }
        guard let aud = claims["aud"]?.stringValue, aud == audience else { throw HMSError(.invalidJWT, "the JWT's aud is not \(audience)") }
        guard let iat = claims["iat"]?.intValue, let exp = claims["exp"]?.intValue else {
            throw HMSError(.invalidJWT, "the JWT needs whole-number iat and exp claims")
        }
        let seconds = Int(now.timeIntervalSince1970)
        guard iat <= seconds + leeway else { throw HMSError(.invalidJWT, "the JWT's iat is in the future") }
        guard exp > seconds else { throw HMSError(.invalidJWT, "the JWT expired") }
        let (span, overflow) = exp.subtractingReportingOverflow(iat)
        guard !overflow, span > 0, span <= Self.lifetime else {
            throw HMSError(.invalidJWT, "the JWT's exp must be after iat and at most \(Self.lifetime) seconds after it")
        }
        return HMSJWTClaims(issuer: iss, audience: aud, issuedAt: iat, expiresAt: exp)
    }
}
