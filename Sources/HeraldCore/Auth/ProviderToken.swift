#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A provider authentication token: an ES256 JWT signed with a ``ProviderKey`` (apns-spec §2).
///
/// The token is a credential. Printing it (`description`, `dump`, string interpolation) shows its
/// key ID, team ID and issue time only; ``redacted`` shows the JWT with its signature hidden.
public struct ProviderToken: Sendable, Hashable {
    /// The JWT: `base64url(header).base64url(claims).base64url(R‖S)`.
    public let jwt: String
    /// `kid`.
    public let keyID: String
    /// `iss`.
    public let teamID: String
    /// `iat`, whole seconds.
    public let issuedAt: Date
    /// Increases by one for every token an issuer mints; tells a renewed token from the one it replaced.
    public let generation: Int

    /// Signs a new token: header `{"alg":"ES256","kid":…}`, claims `{"iss":…,"iat":…}` with `iat`
    /// as an integer, signature the raw 64-byte R‖S, all base64url without padding (§2).
    public init(key: ProviderKey, issuedAt: Date, generation: Int = 0) throws(ProviderKeyError) {
        let seconds = Int(issuedAt.timeIntervalSince1970.rounded(.down))
        var header = JSONWriter(capacity: 48)
        header.beginObject()
        header.key("alg" as StaticString)
        header.string("ES256")
        header.key("kid" as StaticString)
        header.string(key.keyID)
        header.endObject()
        var claims = JSONWriter(capacity: 48)
        claims.beginObject()
        claims.key("iss" as StaticString)
        claims.string(key.teamID)
        claims.key("iat" as StaticString)
        claims.int(seconds)
        claims.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        let signature = try key.sign(Array(signingInput.utf8))
        self.jwt = signingInput + "." + Base64URL.encode(signature)
        self.keyID = key.keyID
        self.teamID = key.teamID
        self.issuedAt = Date(timeIntervalSince1970: TimeInterval(seconds))
        self.generation = generation
    }

    /// The `authorization` header value: `bearer <JWT>`.
    public var authorization: String { "bearer " + jwt }

    /// The JWT with its signature replaced by `<redacted>`: safe to print.
    public var redacted: String {
        guard let lastDot = jwt.lastIndex(of: ".") else { return "<redacted>" }
        return jwt[...lastDot] + "<redacted>"
    }
}

extension ProviderToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "ProviderToken(keyID: \(keyID), teamID: \(teamID), iat: \(Int(issuedAt.timeIntervalSince1970)), signature redacted)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "teamID": teamID, "issuedAt": issuedAt, "generation": generation])
    }
}
